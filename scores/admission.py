"""Admission control (contract 13.2): refuse a submission before storing anything when what the
service accepted already cannot all be on the boards within the 1 s of contract section 4.

What is accepted but not yet visible is the projector's backlog, scores_pending: the projector
deletes a pending row in the transaction that writes its values and mirrors them to Redis right
after that commit, in the same loop (scores/projection/), so a slow Redis mirror shows here as
pending rows that wait. Two readings of it decide:

- the age of the oldest pending row: past ADMISSION_MAX_LAG_MS the projector is not keeping up;
- the matches pending, with the submission's own: past ADMISSION_MAX_PENDING (default 2500, half
  of what one projector batch claims, scores/projection/batch.py MAX_MATCHES: the readings of
  several web processes are each up to ADMISSION_REFRESH_MS old, and what they accept meanwhile
  must still fit in the next batch) a match accepted now would wait for more than one more batch
  however young the oldest row is. A submission larger than the bound is taken when nothing waits.

The reading is a per-process cache, refreshed by the request that finds it older than
ADMISSION_REFRESH_MS (one small query per process per interval, never one per request); between
refreshes the oldest row is taken to have aged by the time elapsed, so a stale reading errs
towards refusing. docs/operations.md says how an operator reads and tunes the bounds."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from rest_framework import status

from leaderboard_project.errors import ApiError

RETRY_AFTER_SECONDS = 1
# the oldest rows by id are looked at, no more: past this many the bound is exceeded anyway
SCAN = 20000


class Overloaded(ApiError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    code = "overloaded"

    def __init__(self, message: str, retry_after: int = RETRY_AFTER_SECONDS) -> None:
        super().__init__(message)
        self.wait = retry_after  # DRF's exception handler answers it as Retry-After


@dataclass(frozen=True)
class Backlog:
    oldest_seconds: float  # age of the oldest pending row when read (0: none)
    matches: int  # matches in the pending rows read (a match in two lanes counts twice)
    read_at: float  # time.monotonic() of the reading

    def age_now(self, now: float) -> float:
        return self.oldest_seconds + (now - self.read_at) if self.matches else 0.0


_READ = f"""
SELECT count(*), COALESCE(sum(cardinality(match_pks)), 0),
       COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0)
FROM (SELECT match_pks, created_at FROM scores_pending ORDER BY id LIMIT {SCAN}) AS oldest
"""

_cached: Backlog | None = None


def backlog_read() -> Backlog:
    """The backlog as Postgres has it now (one query)."""
    with connection.cursor() as cur:
        cur.execute(_READ)
        _rows, matches, oldest = cur.fetchone()
    return Backlog(max(0.0, float(oldest)), int(matches), time.monotonic())


def backlog(*, now: float | None = None) -> Backlog:
    """This process's reading, refreshed when older than ADMISSION_REFRESH_MS."""
    global _cached
    now = time.monotonic() if now is None else now
    cached = _cached
    if cached is None or now - cached.read_at >= settings.ADMISSION_REFRESH_MS / 1000:
        cached = _cached = backlog_read()
    return cached


def backlog_forget() -> None:
    """Drop this process's reading (tests, after changing the bounds)."""
    global _cached
    _cached = None


def admission_check(*, matches: int = 1) -> None:
    """Raise Overloaded when a submission of this many matches, accepted now, could miss the 1 s
    promise."""
    max_lag_ms = settings.ADMISSION_MAX_LAG_MS
    if max_lag_ms <= 0:
        return
    now = time.monotonic()
    reading = backlog(now=now)
    age = reading.age_now(now)
    if age * 1000 > max_lag_ms:
        raise Overloaded(
            f"the boards are {age:.2f} s behind (bound {max_lag_ms / 1000:.2f} s): nothing was stored; "
            "retry the same body later"
        )
    if reading.matches and reading.matches + matches > settings.ADMISSION_MAX_PENDING:
        raise Overloaded(
            f"{reading.matches} matches wait to reach the boards (bound {settings.ADMISSION_MAX_PENDING}): "
            "nothing was stored; retry the same body later"
        )
