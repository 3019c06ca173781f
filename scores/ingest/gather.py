"""Group commit for single submissions: concurrent single-match requests in one web process,
arriving within INGEST_GATHER_MS of each other, are stored by one call of matches_submit (one
append statement, one transaction, one commit, one wake-up of the projector); each request
still gets exactly its own answer, and one bad or conflicting match never fails another
(matches_submit judges each match on its own, as in a batch).

Only worth it where one process serves several requests at once (WEB_THREADS > 1 behind
granian): a process that serves one request at a time has nobody to gather with, so
INGEST_GATHER_MS=0 (the default) calls match_submit directly.

Leader and followers: the first request to find no gathering under way leads it: it waits up
to the window (or until INGEST_GATHER_MAX are waiting), takes everything waiting, and stores it
on its own database connection; requests arriving meanwhile start the next group, gathered
while this one is written. A follower waits for its outcome. Nothing is acknowledged before the
group's commit, so `kill -9` of the process leaves either the whole group stored (its callers
saw no answer, and their retries are duplicates) or none of it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from django.conf import settings

from scores.ingest.matches import MatchIn, MatchOutcome
from scores.ingest.submit import match_submit, matches_submit
from scores.models import Game, ServerKey


@dataclass
class _Waiter:
    game: Game
    server_key: ServerKey | None
    match: MatchIn
    done: threading.Event = field(default_factory=threading.Event)
    outcome: MatchOutcome | None = None
    error: BaseException | None = None


_lock = threading.Lock()
_arrived = threading.Condition(_lock)
_waiting: list[_Waiter] = []
_leading = False


def match_submit_gathered(*, game: Game, server_key: ServerKey | None, match: MatchIn) -> MatchOutcome:
    """match_submit, stored together with the single submissions other threads of this process
    make at the same moment. Raises what match_submit raises, for this match alone."""
    window = settings.INGEST_GATHER_MS / 1000
    if window <= 0:
        return match_submit(game=game, server_key=server_key, match=match)
    global _leading
    me = _Waiter(game, server_key, match)
    with _arrived:
        _waiting.append(me)
        lead = not _leading
        if lead:
            _leading = True
            deadline = time.monotonic() + window
            while len(_waiting) < settings.INGEST_GATHER_MAX:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                _arrived.wait(left)
            group = list(_waiting)
            _waiting.clear()
            _leading = False
        else:
            _arrived.notify()
    if lead:
        _store(group)
    else:
        me.done.wait()
    if me.error is not None:
        raise me.error
    assert me.outcome is not None
    return me.outcome


def _store(group: list[_Waiter]) -> None:
    """Store a group, one matches_submit per (game, server key); hand every waiter its answer."""
    by_caller: dict[tuple[int, int | None], list[_Waiter]] = {}
    for w in group:
        by_caller.setdefault((w.game.id, w.server_key.id if w.server_key else None), []).append(w)
    try:
        for waiters in by_caller.values():
            try:
                outcomes = matches_submit(
                    game=waiters[0].game, server_key=waiters[0].server_key, matches=[w.match for w in waiters]
                )
            except BaseException as exc:  # the whole group's transaction failed: each caller hears it
                for w in waiters:
                    w.error = exc
                continue
            for w, outcome in zip(waiters, outcomes, strict=True):
                if outcome.error is not None:
                    w.error = outcome.error
                else:
                    w.outcome = outcome
    finally:
        for w in group:
            if w.outcome is None and w.error is None:
                w.error = RuntimeError("the gathered group was not stored")
            w.done.set()
