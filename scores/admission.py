"""Admission control (docs/api.md §4.5): refuse a submission before storing anything when what the
service accepted already cannot all be on the boards within the 1 s of docs/api.md §4.

What is accepted but not yet visible is the projector's backlog, scores_pending: the projector
deletes a pending row in the transaction that writes its values and mirrors them to Redis right
after that commit, in the same loop (scores/projection/), so a slow Redis mirror shows here as
pending rows that wait. Three readings decide:

- the age of the oldest pending row: past ADMISSION_MAX_LAG_MS the projector is not keeping up;
- the time what waits will take to show: the matches pending, with the submission's own, times
  the projectors' measured seconds per match (scores/projection/pace.py). Past
  ADMISSION_MAX_LAG_MS a match accepted now would show late however young the oldest row is.
  The age alone reacts too late: a backlog that is still young can already be seconds of work
  for a projector on a busy machine, and everything accepted behind it waits for all of it;
- the matches pending, with the submission's own, past ADMISSION_MAX_PENDING: a bound that holds
  while no pace is known (a projector that only ever saw small batches).

A submission larger than the bounds is taken when nothing waits, as long as it alone would show
within ALONE_FACTOR times ADMISSION_MAX_LAG_MS (0.75 s at the default: what other processes
accept on a stale reading waits behind it, and must still show within the 1 s).

The reading is a per-process cache, refreshed by the request that finds it older than
ADMISSION_REFRESH_MS (one small query per process per interval, never one per request); between
refreshes the oldest row is taken to have aged by the time elapsed and what this process
accepted since is added to what waits, so a stale reading errs towards refusing. What other
processes accept meanwhile it cannot see: that error is small for a single match, not for a
large batch, so a submission that alone takes more than a quarter of the bound is decided again
inside its own transaction, on a fresh reading, under a lock that large submissions take one at
a time until they commit (admission_recheck). docs/operations.md says how an operator reads and
tunes the bounds."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from rest_framework import status

from leaderboard_project.errors import ApiError
from scores.locks import admit_lock
from scores.projection.pace import PACE_SQL

RETRY_AFTER_SECONDS = 1
ALONE_FACTOR = 1.5
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
    seconds_per_match: float | None = None  # the running projectors' combined pace (None: unknown)

    def age_now(self, now: float) -> float:
        return self.oldest_seconds + (now - self.read_at) if self.matches else 0.0


_READ = f"""
SELECT count(*), COALESCE(sum(cardinality(match_pks)), 0),
       COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(created_at)), 0),
       ({PACE_SQL.strip()})
FROM (SELECT match_pks, created_at FROM scores_pending ORDER BY id LIMIT {SCAN}) AS oldest
"""

_cached: Backlog | None = None
_accepted_since = 0  # matches this process admitted since its reading


def backlog_read() -> Backlog:
    """The backlog as Postgres has it now (one query)."""
    with connection.cursor() as cur:
        cur.execute(_READ)
        _rows, matches, oldest, pace = cur.fetchone()
    return Backlog(max(0.0, float(oldest)), int(matches), time.monotonic(), float(pace) if pace is not None else None)


def backlog(*, now: float | None = None) -> Backlog:
    """This process's reading, refreshed when older than ADMISSION_REFRESH_MS."""
    global _cached, _accepted_since
    now = time.monotonic() if now is None else now
    cached = _cached
    if cached is None or now - cached.read_at >= settings.ADMISSION_REFRESH_MS / 1000:
        cached = _cached = backlog_read()
        _accepted_since = 0
    return cached


def backlog_forget() -> None:
    """Drop this process's reading (tests, after changing the bounds)."""
    global _cached, _accepted_since
    _cached = None
    _accepted_since = 0


def admission_check(*, matches: int = 1) -> bool:
    """Raise Overloaded when a submission of this many matches, accepted now, could miss the 1 s
    promise. Returns True when the submission is large enough that the caller must decide again
    with admission_recheck() inside the transaction that stores it."""
    global _accepted_since
    max_lag_ms = settings.ADMISSION_MAX_LAG_MS
    if max_lag_ms <= 0:
        return False
    now = time.monotonic()
    reading = backlog(now=now)
    _decide(reading, now, matches=matches, waiting=reading.matches + _accepted_since)
    _accepted_since += matches
    return _large(reading, matches)


def admission_recheck(*, matches: int) -> None:
    """Inside the submission's transaction, before it stores anything: wait for the large
    submissions before it to commit (their matches are then in the reading), read the backlog
    afresh and decide again. The lock is held until this transaction ends; lock order: it is
    taken before the ingest locks (scores/locks.py)."""
    if settings.ADMISSION_MAX_LAG_MS <= 0:
        return
    admit_lock()
    reading = backlog_read()
    _decide(reading, reading.read_at, matches=matches, waiting=reading.matches)


def _large(reading: Backlog, matches: int) -> bool:
    bound_s = settings.ADMISSION_MAX_LAG_MS / 1000
    if reading.seconds_per_match is not None:
        return matches * reading.seconds_per_match > bound_s / 4
    return matches > settings.ADMISSION_MAX_PENDING / 4


def _decide(reading: Backlog, now: float, *, matches: int, waiting: int) -> None:
    max_lag_ms = settings.ADMISSION_MAX_LAG_MS
    age = reading.age_now(now)
    if age * 1000 > max_lag_ms:
        raise Overloaded(
            f"the boards are {age:.2f} s behind (bound {max_lag_ms / 1000:.2f} s): nothing was stored; "
            "retry the same body later"
        )
    spm = reading.seconds_per_match
    if spm is not None:
        eta = (waiting + matches) * spm
        alone = not waiting and eta * 1000 <= ALONE_FACTOR * max_lag_ms
        if eta * 1000 > max_lag_ms and not alone:
            raise Overloaded(
                f"what waits would take {eta:.2f} s to reach the boards with this submission "
                f"(bound {max_lag_ms / 1000:.2f} s): nothing was stored; retry the same body later"
            )
    if waiting and waiting + matches > settings.ADMISSION_MAX_PENDING:
        raise Overloaded(
            f"{waiting} matches wait to reach the boards (bound {settings.ADMISSION_MAX_PENDING}): "
            "nothing was stored; retry the same body later"
        )
