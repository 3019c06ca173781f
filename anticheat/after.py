"""After the fact (Celery): the heavier checks on matches the projector applied, and the
recent statistics the synchronous rules compare against (board_top, server_outlier).

A check that finds something holds the match (its values recomputed without it, until a
moderator approves or voids it) or flags it for review, through anticheat/services.py.
Adding a check: a class with `check(config, results)` listed in ASYNC_RULES."""

from __future__ import annotations

import contextlib
import logging
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from anticheat.models import BoardStats
from anticheat.rules import Verdict, stats_cache_clear
from anticheat.services import Actor, match_flag, match_hold
from anticheat.thresholds import Thresholds, thresholds_for
from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis, log_unavailable
from scores import encoding, history, pgarrays
from scores.models import Game, Match
from scores.selectors import GameConfig, game_config

log = logging.getLogger(__name__)

# --- the rules ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredResult:
    match_pk: int
    match_id: str
    player_id: int
    player: str
    board: str
    score: int


class RecentHistoryRule:
    """After the fact, best boards: a result whose value part is more than
    `async_history_factor` times the median of the player's previous 20 accepted results on the
    board (needs `async_history_min_results` of them): hold until reviewed."""

    name = "recent_history"

    def check(self, config: GameConfig, results: Sequence[StoredResult]) -> dict[int, Verdict]:
        out: dict[int, Verdict] = {}
        candidates = []
        for res in results:
            board = config.boards[res.board]
            t = thresholds_for(board.anticheat)
            if board.mode == "best" and t.async_history_factor:
                candidates.append((res, board, t))
        past = history.previous_scores(wanted=[(res.player_id, board.id, res.match_pk) for res, board, _ in candidates])
        for res, board, t in candidates:
            previous = [encoding.score_part(board, s) for s in past[(res.player_id, board.id, res.match_pk)]]
            if len(previous) < t.async_history_min_results:
                continue
            median = statistics.median(previous)
            part = encoding.score_part(board, res.score)
            if part > median * t.async_history_factor and part - median >= max(1, t.history_min_gap):
                out[res.match_pk] = Verdict(
                    "hold",
                    self.name,
                    f"{res.player!r} scored {res.score} on {res.board!r}, more than {t.async_history_factor:g}x "
                    f"the median of their last {len(previous)} results",
                    {"player": res.player, "board": res.board, "score": res.score, "median_value_part": median},
                )
        return out


ASYNC_RULES = [RecentHistoryRule()]


def recent_window(now: datetime) -> datetime:
    """The statistics of the board_top and server_outlier rules look this far back."""
    return now - timedelta(days=7)


# --- running them -----------------------------------------------------------------------------


def matches_check(*, match_pks: Sequence[int]) -> int:
    """The heavier checks (ASYNC_RULES) on accepted matches; holds what they find. Returns how
    many matches were held. Matches voided or held meanwhile are skipped, and so is every match
    a person decided (approved): the hold itself is conditional on that too, for a decision
    taken while the check runs."""
    rows = list(
        Match.objects.filter(pk__in=match_pks, status=Match.Status.ACCEPTED, decided_at__isnull=True).values_list(
            "pk",
            "match_id",
            "game_id",
            "results__player_id",
            "results__player__external_id",
            "results__board__slug",
            "results__score",
        )
    )
    by_game: dict[int, list[StoredResult]] = defaultdict(list)
    for pk, match_id, game_id, player_id, player, board, score in rows:
        by_game[game_id].append(StoredResult(pk, match_id, player_id, player, board, score))
    held = 0
    for game_id, results in by_game.items():
        config = game_config(Game.objects.get(pk=game_id))
        for rule in ASYNC_RULES:
            for match_pk, verdict in rule.check(config, results).items():
                match = Match.objects.select_related("game").get(pk=match_pk)
                if verdict.action == "hold":
                    held += match_hold(match=match, verdict=verdict, actor=Actor.rules(verdict.rule))
                else:
                    match_flag(match=match, verdict=verdict, actor=Actor.rules(verdict.rule))
    return held


# The after-the-fact checks take their work from a table (CheckBacklog), written in the projector's
# batch transaction: a match applied is a match to check, whatever happens to Redis or a worker
# afterwards. One drain task is woken at a time (a Redis flag with an expiry, so a lost task is
# woken again by a later batch), DRAIN_DELAY_SECONDS later, so the matches of many projector
# batches share one task; beat's sweep (anticheat-check-pending) drains what a wake-up missed,
# such as matches applied while Redis, the broker, was down.
SCHEDULE_TTL = 30
DRAIN_CHUNK = 200
DRAIN_DELAY_SECONDS = 0.5


def checks_enqueue(*, match_pks: Sequence[int]) -> None:
    """Record applied matches for the after-the-fact checks, inside the caller's transaction (the
    projector's batch), and wake a drain once it commits."""
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO anticheat_checkbacklog (match_id) SELECT unnest(%s::bigint[]) ON CONFLICT DO NOTHING",
            [pgarrays.ints(match_pks)],
        )
    transaction.on_commit(drain_wake)


def drain_wake() -> None:
    """Queue a drain unless one is queued already. With Redis down nothing is queued: the
    backlog waits for beat's sweep."""
    from anticheat.tasks import check_pending

    try:
        if get_redis().set(keys.ANTICHEAT_SCHEDULED, 1, nx=True, ex=SCHEDULE_TTL):
            check_pending.apply_async(countdown=DRAIN_DELAY_SECONDS, expires=SCHEDULE_TTL, retry=False)
    except REDIS_DOWN as exc:
        log_unavailable(log, "could not wake the anti-cheat drain (the backlog waits for the sweep): %s", exc=exc)


def checks_drain() -> int:
    """Run the after-the-fact checks on every match in the backlog; returns how many were held.
    Each chunk is claimed (deleted) and checked in one transaction, so a drain killed midway
    leaves its chunk to the next one, and concurrent drains take different chunks (SKIP LOCKED).
    The flag goes first, so a match applied while the drain runs wakes the next drain itself."""
    with contextlib.suppress(*REDIS_DOWN):  # then beat's sweep runs it: the backlog is in Postgres
        get_redis().delete(keys.ANTICHEAT_SCHEDULED)
    held = 0
    while True:
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute(
                    "DELETE FROM anticheat_checkbacklog WHERE match_id IN (SELECT match_id FROM anticheat_checkbacklog"
                    " ORDER BY match_id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING match_id",
                    [DRAIN_CHUNK],
                )
                match_pks = [pk for (pk,) in cur.fetchall()]
            if not match_pks:
                return held
            held += matches_check(match_pks=match_pks)


def board_stats_refresh(*, now: datetime | None = None) -> int:
    """Recompute each board's recent statistics (beat, every few minutes): the value part at
    its top percentile and the server keys out of line with the others. Returns boards done."""
    now = now or timezone.now()
    since = recent_window(now)
    done = 0
    for game in Game.objects.order_by("id"):
        config = game_config(game)
        for board in config.boards.values():
            t = thresholds_for(board.anticheat)
            rows = history.recent_value_parts(board=board, since=since)
            parts = sorted(vp for _, vp in rows)
            top = parts[min(len(parts) - 1, int(len(parts) * t.top_percentile / 100))] if parts else None
            BoardStats.objects.update_or_create(
                board_id=board.id,
                defaults={"top_value_part": top, "sample": len(parts), "outlier_keys": _outliers(rows, t)},
            )
            done += 1
    stats_cache_clear()  # this process reads them afresh at once; others within STATS_CACHE_SECONDS
    return done


def _outliers(rows: list[tuple[int | None, int]], t: Thresholds) -> list[int]:
    """Server keys whose mean value part is more than server_zscore standard deviations above
    the mean of the other servers' means (leave-one-out, at least 3 servers with enough results)."""
    if not t.server_zscore:
        return []
    per_key: dict[int, list[int]] = defaultdict(list)
    for key, vp in rows:
        if key is not None:
            per_key[key].append(vp)
    means = {k: statistics.fmean(v) for k, v in per_key.items() if len(v) >= t.server_min_results}
    if len(means) < 3:
        return []
    out = []
    for key, mean in means.items():
        others = [m for k, m in means.items() if k != key]
        spread = statistics.pstdev(others)
        centre = statistics.fmean(others)
        # with identical other servers any clear excess is out of line: use a floor of 1 unit
        if (mean - centre) / max(spread, 1.0) > t.server_zscore:
            out.append(key)
    return sorted(out)
