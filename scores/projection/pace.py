"""The projector's pace: how many seconds it spends per match applied, published for admission
control (scores/admission.py), which turns the backlog's size into the time it will take to show.

A batch's wall time, from the claim to the end of its Redis mirror, over the matches it applied,
is only a fair sample when the batch is large: a small batch is mostly fixed cost, and its
seconds per match would make a burst look slower to apply than it is. Samples are smoothed
(a single slow batch moves the figure part of the way) and published at most every
PUBLISH_SECONDS, and at least every REFRESH_SECONDS while the projector lives, so admission can
tell a running projector's pace from a dead one's (docs/operations.md).

A pace no batch has confirmed for SAMPLE_LIFE_SECONDS is withdrawn: admission then falls back to
its bound on waiting matches, as with no pace at all. Kept, a pace sampled while the machine
was saturated would refuse every large batch for good: refused batches are never applied, so
no new sample could correct it (seen in a benchmark: a 1,000-match batch priced at 1.43 s, every
one refused for the whole run)."""

from __future__ import annotations

import os
import socket
import time

from django.db import connection, transaction

MIN_MATCHES = 100  # a batch smaller than this says more about fixed costs than about pace
SMOOTHING = 0.3  # weight of the newest sample
PUBLISH_SECONDS = 0.25
REFRESH_SECONDS = 10.0
FORGET_SECONDS = 30.0  # a pace not refreshed for this long is a stopped projector's
SAMPLE_LIFE_SECONDS = 30.0  # a pace no large batch confirmed for this long is withdrawn

_UPSERT = """
INSERT INTO scores_projectorpace (name, seconds_per_match, updated_at) VALUES (%s, %s, clock_timestamp())
ON CONFLICT (name) DO UPDATE SET seconds_per_match = EXCLUDED.seconds_per_match, updated_at = EXCLUDED.updated_at
"""


class Pace:
    """One projector process's pace, as it measures and publishes it."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.seconds_per_match: float | None = None
        self._published_at = -1e9
        self._published: float | None = None
        self._sampled_at = -1e9

    def sample(self, *, matches: int, seconds: float, now: float | None = None) -> None:
        if matches < MIN_MATCHES or seconds <= 0:
            return
        spm = seconds / matches
        old = self.seconds_per_match
        self.seconds_per_match = spm if old is None else old + SMOOTHING * (spm - old)
        self._sampled_at = time.monotonic() if now is None else now

    def publish(self, *, now: float | None = None) -> bool:
        """Write the pace when it changed and PUBLISH_SECONDS passed, or REFRESH_SECONDS did, or
        withdraw it when no sample came for SAMPLE_LIFE_SECONDS; returns whether it wrote. Its own statement, outside any batch's transaction, that need
        not wait for the disk (a lost pace is measured again)."""
        now = time.monotonic() if now is None else now
        spm = self.seconds_per_match
        if spm is not None and now - self._sampled_at > SAMPLE_LIFE_SECONDS:
            self.seconds_per_match = self._published = None
            with connection.cursor() as cur:
                cur.execute("DELETE FROM scores_projectorpace WHERE name = %s", [self.name])
            return True
        if spm is None:
            return False
        due = now - self._published_at >= (PUBLISH_SECONDS if spm != self._published else REFRESH_SECONDS)
        if not due:
            return False
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SELECT set_config('synchronous_commit', 'off', true)")
            cur.execute(_UPSERT, [self.name, spm])
        self._published_at, self._published = now, spm
        return True

    def forget(self) -> None:
        """Remove this process's pace (a projector stopping), and any stopped projector's."""
        with connection.cursor() as cur:
            cur.execute(
                "DELETE FROM scores_projectorpace WHERE name = %s OR updated_at < clock_timestamp() - %s * interval '1 s'",
                [self.name, FORGET_SECONDS],
            )


# The combined pace of the projectors running now: each applies its own lanes, so their rates add.
PACE_SQL = f"""
SELECT 1 / sum(1 / seconds_per_match) FROM scores_projectorpace
WHERE seconds_per_match > 0 AND updated_at > clock_timestamp() - interval '{FORGET_SECONDS:g} s'
"""
