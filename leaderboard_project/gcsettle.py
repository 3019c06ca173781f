"""The garbage collector of a serving process, settled once the application is loaded
(docs/operations.md, "Garbage collection in the web processes").

A full collection walks every tracked object of the process. Right after start that is Django,
DRF, the URL patterns and every imported module (over 100,000 objects), none of which ever
becomes garbage, so each full collection paid for them again: a stall of a whole request
queue's worth of time on a busy 2-core machine. `gc.freeze()` moves them out of the
collector's generations (they are still freed by reference counting should they go), and a
larger first threshold lets a request's own short-lived containers die young instead of being
promoted by a collection in the middle of it."""

from __future__ import annotations

import gc

# gen0 at 10,000 allocations (Python's default is 700): a read builds a few thousand containers
# and drops them when it answers; the older generations keep their default ratios
THRESHOLDS = (10_000, 10, 10)


def settle() -> None:
    """Load what the first request would load (the URL patterns import every view), collect
    once, and freeze the survivors."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports the views now, not in a request
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
