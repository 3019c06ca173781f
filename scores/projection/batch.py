"""One projector batch: claim pending matches, apply their results to values, in one transaction.

    BEGIN
      apply locks of the lanes (scores/locks.py)        skip the ones a void holds now
      the fold (values.py), one statement: DELETE the oldest pending rows of those lanes
        (whole rows, up to MAX_MATCHES matches: the progress, committed with the values),
        expand their accepted results into windows, aggregate, upsert, apply display names
      INSERT scores_boardoutbox                         what changed, for the Redis mirror
      matches_applied                                   anticheat/ records its after-the-fact checks
    COMMIT
    after commit: score_accepted (boards/ mirrors to Redis, live updates)

The pending rows are deleted in the transaction that writes their values, so `kill -9` at any
point either leaves both (the next batch applies them) or neither (applied once). Between the
commit and the Redis write, the outbox row keeps what Redis still lacks; boards/ replays it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from scores import locks
from scores.locks import ALL_LANES
from scores.projection.values import values_project
from scores.signals import matches_applied

# How many matches a batch claims at most (whole pending rows; a 1000-match request is one
# row per lane it touches).
MAX_MATCHES = 5000


@dataclass
class BatchReport:
    rows: int = 0  # pending rows applied
    matches: int = 0
    results: int = 0
    values: int = 0  # values that changed
    oldest: datetime | None = None  # when the oldest applied row was committed: the lag
    lanes: list[int] = field(default_factory=list)


def batch_apply(
    *,
    lanes: Sequence[int] = ALL_LANES,
    max_matches: int = MAX_MATCHES,
    upto_id: int | None = None,
    wait: bool = False,
) -> BatchReport:
    """Apply one batch of the pending matches of these lanes: its own transaction, or a
    savepoint of the caller's (whose locks then last until the caller commits).

    The projector skips lanes whose apply lock is taken (wait=False); moderation and
    freezes wait for them (wait=True)."""
    report = BatchReport()
    with transaction.atomic():
        if wait:
            locks.apply_lock(lanes)
            locked = sorted(set(lanes))
        else:
            locked = locks.apply_lock_try(lanes)
        if not locked:
            return report
        report.lanes = locked
        folded = values_project(lanes=locked, max_matches=max_matches, upto_id=upto_id)
        if not folded.rows:
            return report
        report.rows, report.oldest, report.matches = folded.rows, folded.oldest, len(folded.match_pks)
        report.results, report.values = folded.results, len(folded.changed)
        matches_applied.send(sender=None, match_pks=folded.match_pks)  # in the transaction (scores/signals.py)
    return report


def pending_apply(*, lanes: Sequence[int] = ALL_LANES, upto_id: int | None = None) -> int:
    """Apply every pending match of these lanes committed so far (up to upto_id), waiting for a
    projector batch that holds one. Inside a transaction, the lanes stay locked until
    it ends: moderation then recomputes knowing nothing of them is half-applied. Returns how
    many matches were applied."""
    if upto_id is None:
        with connection.cursor() as cur:
            cur.execute("SELECT COALESCE(max(id), 0) FROM scores_pending")
            upto_id = cur.fetchone()[0]
    applied = 0
    while True:
        # with nothing to claim this still takes the locks: the caller's recompute must not
        # race a projector batch either
        report = batch_apply(lanes=lanes, upto_id=upto_id, wait=True)
        if not report.rows:
            return applied
        applied += report.matches


def pending_lag() -> tuple[int, datetime | None]:
    """How many pending rows wait, and when the oldest was committed (None: nothing waits)."""
    with connection.cursor() as cur:
        cur.execute("SELECT count(*), min(created_at) FROM scores_pending")
        count, oldest = cur.fetchone()
    return count, oldest
