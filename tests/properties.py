"""How many examples a property test draws: its loop size in `make test`, its deep size in
`make test-deep` (docs/dev-environment.md, "Property tests: the loop and the deep run").

Every run draws new examples (hypothesis seeds each run afresh), so the loop sizes, run at every
change, keep walking new shapes; the deep sizes are the counts these tests were written with,
for a change to the projector, the reads or the reference model. A falsifying example a test
ever found stays pinned with `@example(...)` and runs at every size."""

from __future__ import annotations

import os

DEEP = os.environ.get("PROPERTY_DEPTH") == "deep"


def examples(*, loop: int, deep: int) -> int:
    """`loop` in the everyday run, `deep` when PROPERTY_DEPTH=deep."""
    return deep if DEEP else loop
