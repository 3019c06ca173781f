"""The projector process (`manage.py projector`): applies pending matches batch after batch.

- It wakes on NOTIFY (each submission notifies after its commit), so a quiet service applies a
  submission within milliseconds; with nothing notified it still looks every `idle_seconds`.
  While submissions keep coming it runs one batch per INTERVAL_SECONDS, each taking whatever is
  pending (up to MAX_MATCHES; a backlog is taken batch after batch without pause), so batches
  grow with the load and the cost per result falls.
- Lanes (scores/locks.py): a process applies the lanes it owns. Ownership is a session advisory
  lock held on its LISTEN connection, so two processes never own one lane, and when a process
  dies (its connection drops) another that wants the lane takes it within OWN_RETRY_SECONDS.
  Run N processes side by side, on N machines, with disjoint `--lanes` (each may also list the
  others' lanes to stand by for them).
- Postgres down: it logs once, retries with a growing pause, and carries on where the pending
  rows say when Postgres is back. Nothing is lost: the rows are the progress.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg
from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from leaderboard_project.database import connect_params
from scores.events import events_prune
from scores.locks import ALL_LANES, NOTIFY_CHANNEL, OWN
from scores.partitions import result_partitions_ensure
from scores.projection.batch import MAX_MATCHES, batch_apply
from scores.projection.pace import Pace

log = logging.getLogger(__name__)

OWN_RETRY_SECONDS = 5.0
RECONNECT_PAUSE = 0.5  # seconds between attempts to reach Postgres again
# the day partitions made ahead (scores/partitions.py), the events feed's retention (scores/events.py)
UPKEEP_EVERY_SECONDS = 3600.0
REPORT_EVERY_SECONDS = 30.0
# While submissions keep coming, at most one batch per interval (a backlog is taken at once,
# batch after full batch; the first submission after a quiet spell is applied at once): the
# cost of a batch is mostly fixed, so this bounds the projector's CPU at any submission rate, at
# the price of up to this much more delay before a result shows.
INTERVAL_SECONDS = float(os.environ.get("PROJECTOR_INTERVAL_MS", "20")) / 1000


@dataclass
class Totals:
    """What a projector process has applied since it started (logged, and asserted by tests)."""

    batches: int = 0
    matches: int = 0
    results: int = 0
    max_lag_ms: float = 0.0  # the longest a result waited from its commit to its values
    owned: list[int] = field(default_factory=list)


class Projector:
    def __init__(
        self,
        *,
        lanes: Sequence[int] = ALL_LANES,
        idle_seconds: float = 1.0,
        interval_seconds: float = INTERVAL_SECONDS,
        max_matches: int = MAX_MATCHES,
        pause_seconds: float = 0.0,
    ) -> None:
        self.wanted = sorted(set(lanes))
        # a deliberate slowdown after every batch that applied something: an overload drill
        # (tests/scores/test_admission.py); 0 in production
        self.pause_seconds = pause_seconds
        self.idle_seconds = idle_seconds
        self.interval_seconds = interval_seconds
        self.max_matches = max_matches
        self.stopping = threading.Event()
        self.totals = Totals()
        self._listen: psycopg.Connection | None = None
        self._owned: list[int] = []
        self.pace = Pace()

    # --- lifecycle ---------------------------------------------------------------------

    def stop(self, *_: object) -> None:
        self.stopping.set()

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self.stop)

    def run(self) -> Totals:
        """Apply batches until stopped. Survives Postgres going away and coming back.

        Retries at a steady RECONNECT_PAUSE, as the web tier's pools do: a pause that doubled
        to 5 s (and never came down again) could bring it back up to 5 s after Postgres, while
        admission control refuses submissions as the backlog ages (docs/reliability.md)."""
        reported = False
        while not self.stopping.is_set():
            try:
                self._run_connected()
                break
            except (DatabaseError, psycopg.Error) as exc:
                # one WARNING per outage (it owned lanes: it had reconnected), not two a second
                level = logging.WARNING if self._owned or not reported else logging.DEBUG
                reported = True
                log.log(level, "projector: Postgres unavailable (%s); retrying every %.1f s",
                        exc.__class__.__name__, RECONNECT_PAUSE)  # fmt: skip
                self._disconnect()
                self.stopping.wait(RECONNECT_PAUSE)
        with contextlib.suppress(DatabaseError, psycopg.Error):
            self.pace.forget()
        self._disconnect()
        return self.totals

    def _upkeep(self) -> None:
        result_partitions_ensure()
        events_prune()

    def _run_connected(self) -> None:
        self._connect()
        now = time.monotonic()
        own_at = upkeep_at = report_at = now
        self._upkeep()
        self._own()
        log.info("projector: owns lanes %s of %s", ranges(self._owned), ranges(self.wanted))
        while not self.stopping.is_set():
            now = time.monotonic()
            if now >= own_at + OWN_RETRY_SECONDS:
                own_at = now
                if len(self._owned) < len(self.wanted):
                    before = list(self._owned)
                    self._own()
                    if self._owned != before:
                        log.info("projector: now owns lanes %s", ranges(self._owned))
            if now >= upkeep_at + UPKEEP_EVERY_SECONDS:
                upkeep_at = now
                self._upkeep()
            if now >= report_at + REPORT_EVERY_SECONDS:
                report_at = now
                self._report()
            started = time.monotonic()
            applied = self.step() if self._owned else 0
            if applied and self.pause_seconds:
                self._pause_until(time.monotonic() + self.pause_seconds)
            if applied >= self.max_matches:
                continue  # a backlog: the next full batch at once
            if applied:
                # Work is arriving: gather it for the rest of the interval, so a batch's fixed
                # cost (its statements, the Redis round trips) is shared by many submissions.
                self._pause_until(started + self.interval_seconds)
                continue
            self._wait(self.idle_seconds)  # idle: the next submission wakes us at once

    def step(self) -> int:
        """One batch over the owned lanes; returns how many matches it applied."""
        started = time.perf_counter()
        report = batch_apply(lanes=self._owned, max_matches=self.max_matches)  # its mirror included
        self.pace.sample(matches=report.matches, seconds=time.perf_counter() - started)
        self.pace.publish()
        if not report.rows:
            return 0
        t = self.totals
        t.batches += 1
        t.matches += report.matches
        t.results += report.results
        if report.oldest is not None:
            t.max_lag_ms = max(t.max_lag_ms, (timezone.now() - report.oldest).total_seconds() * 1000)
        return max(report.matches, 1)

    # --- Postgres: the LISTEN connection, which also holds the ownership locks ------------

    def _connect(self) -> None:
        # the primary among several hosts, as Django's own connections reach it
        params = {**connect_params(settings.DATABASES["default"]), "connect_timeout": 5}
        self._listen = psycopg.connect(**params, autocommit=True)
        self._listen.execute(f"LISTEN {NOTIFY_CHANNEL}")
        self._owned = []

    def _disconnect(self) -> None:
        if self._listen is not None:
            with contextlib.suppress(psycopg.Error):
                self._listen.close()
            self._listen = None
        self._owned = []
        connection.close()  # Django's: a new one on the next query

    def _own(self) -> None:
        assert self._listen is not None
        free = [p for p in self.wanted if p not in self._owned]
        if not free:
            return
        rows = self._listen.execute(
            "SELECT p FROM unnest(%s::int[]) AS u(p) WHERE pg_try_advisory_lock(%s, p)", [free, OWN]
        ).fetchall()
        self._owned = sorted(self._owned + [p for (p,) in rows])

    def _pause_until(self, moment: float) -> None:
        """Sleep until `moment` (monotonic), swallowing the notifications that arrive meanwhile:
        the next batch takes what they announced."""
        assert self._listen is not None
        remaining = moment - time.monotonic()
        if remaining > 0:
            for _ in self._listen.notifies(timeout=remaining):
                pass

    def _wait(self, seconds: float) -> None:
        assert self._listen is not None
        for _ in self._listen.notifies(timeout=seconds, stop_after=1):
            break

    def _report(self) -> None:
        t = self.totals
        log.info(
            "projector: %d batches, %d matches, %d results applied so far; max lag %.0f ms",
            t.batches,
            t.matches,
            t.results,
            t.max_lag_ms,
        )


def owned_lanes() -> set[int]:
    """The lanes some running projector owns now, as Postgres sees their ownership locks
    (a projector that died, or lost its connection, owns nothing)."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT objid FROM pg_locks
            WHERE locktype = 'advisory' AND classid = %s AND objsubid = 2 AND granted
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """,
            [OWN],
        )
        return {int(p) for (p,) in cur.fetchall()}


def ranges(parts: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    out, start, prev = [], None, None
    for p in sorted(parts):
        if start is None:
            start = prev = p
        elif p == prev + 1:
            prev = p
        else:
            out.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = p
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(out) or "none"


def parse_lanes(text: str) -> list[int]:
    """ "all", or "0-7", "0,3,8-11"; raises ValueError naming what is wrong."""
    if text.strip() == "all":
        return list(ALL_LANES)
    found: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise ValueError(f"{part!r} is not a lane or a range like 0-7") from None
        if not 0 <= first <= last < len(ALL_LANES):
            raise ValueError(f"{part!r}: lanes are 0-{len(ALL_LANES) - 1}")
        found.update(range(first, last + 1))
    return sorted(found)
