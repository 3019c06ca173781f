"""After the fact (Celery): the heavier checks on matches the projector applied, and the
recent statistics the synchronous rules compare against (board_top, server_outlier).

A check that finds something holds the match (its values recomputed without it, until a
moderator approves or voids it) or flags it for review, through anticheat/services.py.
Adding a check: a class with `check(config, results)` listed in ASYNC_RULES."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from anticheat.models import BoardStats
from anticheat.rules import Verdict, stats_cache_clear
from anticheat.services import Actor, match_flag, match_hold
from anticheat.thresholds import Thresholds, thresholds_for
from rediskit import keys
from rediskit.client import get_redis
from scores import encoding, history
from scores.models import Game, Match
from scores.selectors import GameConfig, game_config

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


# The after-the-fact checks are queued per request as match ids on a Redis list (one small
# round trip) rather than one Celery message per request: building and publishing a Celery
# message cost a single-match submission more than its Redis mirror. One drain task is queued
# at a time (a flag with an expiry, so a lost task is re-queued by a later submission), and it
# runs DRAIN_DELAY_SECONDS later, so the matches of many projector batches share one task: one
# task per batch meant up to 50 tasks a second at low rates, each a Celery round of its own.
SCHEDULE_TTL = 30
DRAIN_CHUNK = 500
DRAIN_DELAY_SECONDS = 0.5


def checks_enqueue(match_pks: Sequence[int]) -> bool:
    """Queue matches for the after-the-fact checks, and a drain task unless one is queued
    already; True when this call queued it. Raises if Redis is down."""
    from anticheat.tasks import check_pending

    pipe = get_redis().pipeline(transaction=False)
    pipe.rpush(keys.ANTICHEAT_PENDING, *match_pks)
    pipe.set(keys.ANTICHEAT_SCHEDULED, 1, nx=True, ex=SCHEDULE_TTL)
    _, scheduled = pipe.execute()
    if scheduled:
        check_pending.apply_async(countdown=DRAIN_DELAY_SECONDS, expires=SCHEDULE_TTL, retry=False)
    return bool(scheduled)


def checks_drain() -> int:
    """Run the after-the-fact checks on every queued match; returns how many were held. The
    flag goes first, so a match queued while the drain runs queues the next drain itself."""
    r = get_redis()
    r.delete(keys.ANTICHEAT_SCHEDULED)
    held = 0
    while pks := r.lpop(keys.ANTICHEAT_PENDING, DRAIN_CHUNK):
        held += matches_check(match_pks=[int(pk) for pk in pks])
    return held


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
