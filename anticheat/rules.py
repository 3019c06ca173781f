"""Anti-cheat rules: small units, each judging a whole request's new matches at once.

A synchronous rule costs at most one query per request (never one per result) and answers,
per match index, a Verdict: `reject` (refused with 400 rule_rejected, kept only in the audit
log) or `hold` (stored, shown on no board until a moderator approves it). Thresholds come from
the board's configuration (anticheat/thresholds.py). Adding a rule: write a class here and
list it in SYNC_RULES (the checks Celery runs after the fact are in anticheat/after.py)."""

from __future__ import annotations

import json
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol

from django.db import connection

from anticheat.models import BoardStats
from anticheat.thresholds import Thresholds, thresholds_for
from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis
from rediskit.scripts import script
from scores import encoding, history, pgarrays
from scores.models import ServerKey
from scores.selectors import BoardConfig, GameConfig


@dataclass(frozen=True)
class Verdict:
    action: str  # reject | hold | flag
    rule: str
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


class MatchLike(Protocol):
    """What a rule reads of a match (scores.ingest.MatchIn, or a stored match)."""

    match_id: str
    ended_at: datetime
    results: Sequence[Any]  # .player .board .score


@dataclass
class Context:
    """What the rules of one request share; lazily loaded, each at most once."""

    config: GameConfig
    server_key: ServerKey | None
    now: datetime
    matches: dict[int, MatchLike]  # request index -> match
    # (board_id, external player id) -> the player's all-time encoded value before the request,
    # as ingest's append statement read it (None: the rules read it themselves)
    history: dict[tuple[int, str], int] | None = None
    _thresholds: dict[str, Thresholds] = field(default_factory=dict, repr=False)

    def thresholds(self, board_slug: str) -> Thresholds:
        # asked per result and rule: build each board's thresholds once per request
        found = self._thresholds.get(board_slug)
        if found is None:
            found = self._thresholds[board_slug] = thresholds_for(self.config.boards[board_slug].anticheat)
        return found

    def board(self, slug: str) -> BoardConfig:
        return self.config.boards[slug]

    @cached_property
    def stats(self) -> dict[int, StatsRow]:
        return stats_cached({self.config.boards[r.board].id for m in self.matches.values() for r in m.results})


@dataclass(frozen=True)
class StatsRow:
    """What the rules read of a board's BoardStats."""

    board_id: int
    top_value_part: int | None
    sample: int
    outlier_keys: list[int]


# The statistics change when beat refreshes them (every few minutes): each process reads a
# board's row at most this often, not once per submission.
STATS_CACHE_SECONDS = 30.0
_stats_cache: dict[int, tuple[float, StatsRow | None]] = {}


def stats_cached(board_ids: set[int]) -> dict[int, StatsRow]:
    now = time.monotonic()
    stale = sorted(b for b in board_ids if b not in _stats_cache or now - _stats_cache[b][0] > STATS_CACHE_SECONDS)
    if stale:
        # a plain cursor: through the ORM this one row cost a submission a tenth of its Python time
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT board_id, top_value_part, sample, outlier_keys::text FROM {BoardStats._meta.db_table} "
                "WHERE board_id = ANY(%s::bigint[])",
                [pgarrays.ints(stale)],
            )
            found = {b: StatsRow(b, top, sample, json.loads(outliers)) for b, top, sample, outliers in cur.fetchall()}
        for b in stale:
            _stats_cache[b] = (now, found.get(b))
    return {b: row for b in board_ids if (row := _stats_cache[b][1]) is not None}


def stats_cache_clear() -> None:
    _stats_cache.clear()


class Rule(Protocol):
    name: str

    def check(self, ctx: Context) -> dict[int, Verdict]: ...


# --- reject ----------------------------------------------------------------------------------


class MaxGainRule:
    """Total boards: a player's gain from one match (their results on the board summed) above
    `max_gain` is impossible: reject."""

    name = "max_gain"

    def check(self, ctx: Context) -> dict[int, Verdict]:
        out: dict[int, Verdict] = {}
        for i, match in ctx.matches.items():
            gains: dict[tuple[str, str], int] = defaultdict(int)
            for r in match.results:
                if ctx.board(r.board).mode == "total":
                    gains[(r.board, r.player)] += r.score
            for (board, player), gain in sorted(gains.items()):
                limit = ctx.thresholds(board).max_gain
                if limit and gain > limit:
                    out[i] = Verdict(
                        "reject",
                        self.name,
                        f"player {player!r} gains {gain} on board {board!r} in one match; the most allowed is {limit}",
                        {"board": board, "player": player, "gain": gain, "max_gain": limit},
                    )
                    break
        return out


# rate_count()'s fallback while Redis is unreachable
_RATE_UPSERT = """
INSERT INTO anticheat_submissionrate AS s (game_id, player, window_start, count)
SELECT %(game)s, u.p, %(now)s, u.c FROM unnest(%(p)s::text[], %(c)s::int[]) AS u(p, c)
ON CONFLICT (game_id, player) DO UPDATE SET
    count = CASE WHEN s.window_start > %(now)s - interval '60 seconds' THEN s.count + EXCLUDED.count
                 ELSE EXCLUDED.count END,
    window_start = CASE WHEN s.window_start > %(now)s - interval '60 seconds' THEN s.window_start
                        ELSE EXCLUDED.window_start END
RETURNING s.player, s.count
"""


RATE_WINDOW_SECONDS = 60


def rate_count(game_id: int, per_player: dict[str, int], now: datetime) -> dict[str, int]:
    """Add a request's new matches to their players' counters; return each player's count in
    the current window (a fixed 60 s window that opens at the player's first match).

    In Redis, one script call (rediskit/lua/match_rate.lua). With Redis unreachable the count
    falls back to a Postgres upsert (anticheat_submissionrate), inside the request's
    transaction: the rule keeps holding during an outage, at the cost of a row write."""
    players = sorted(per_player)  # one lock order for concurrent requests
    try:
        counts = script("match_rate")(
            keys=[keys.match_rate_key(game_id, p) for p in players],
            args=[*(per_player[p] for p in players), RATE_WINDOW_SECONDS],
            client=get_redis(),
        )
        return dict(zip(players, map(int, counts), strict=True))
    except REDIS_DOWN:
        pass
    with connection.cursor() as cur:
        cur.execute(
            _RATE_UPSERT,
            {
                "game": game_id,
                "now": now,
                "p": pgarrays.texts(players),
                "c": pgarrays.ints(per_player[p] for p in players),
            },
        )
        return dict(cur.fetchall())


class MaxRateRule:
    """More than `max_matches_per_minute` new matches for one player within a minute: reject
    the ones beyond the limit. Counted atomically per request (rate_count), so concurrent
    requests cannot both slip under it."""

    name = "max_rate"

    def check(self, ctx: Context) -> dict[int, Verdict]:
        limits: dict[int, int] = {}
        per_player: dict[str, list[int]] = defaultdict(list)
        for i, match in ctx.matches.items():
            boards = {r.board for r in match.results}
            limit = min((ctx.thresholds(b).max_matches_per_minute or math.inf) for b in boards)
            if limit == math.inf:
                continue
            limits[i] = int(limit)
            for player in sorted({r.player for r in match.results}):
                per_player[player].append(i)
        if not per_player:
            return {}
        totals = rate_count(ctx.config.game.id, {p: len(i) for p, i in per_player.items()}, ctx.now)
        out: dict[int, Verdict] = {}
        for player, indexes in per_player.items():
            before = totals[player] - len(indexes)
            for k, i in enumerate(indexes, start=1):
                if before + k > limits[i] and i not in out:
                    out[i] = Verdict(
                        "reject",
                        self.name,
                        f"player {player!r} submitted more than {limits[i]} matches within a minute",
                        {"player": player, "count": before + k, "max_matches_per_minute": limits[i]},
                    )
        return out


# --- hold ------------------------------------------------------------------------------------


class PlayerHistoryRule:
    """Best boards: a result far above the player's own all-time value on the board (its value
    part more than `history_factor` times theirs, and at least `history_min_gap` above it): hold. Players without a value yet are not judged."""

    name = "player_history"

    def check(self, ctx: Context) -> dict[int, Verdict]:
        wanted = sorted(
            {
                (ctx.board(r.board).id, r.player)
                for m in ctx.matches.values()
                for r in m.results
                if ctx.board(r.board).mode == "best"
                and "all" in ctx.board(r.board).windows
                and ctx.thresholds(r.board).history_factor
            }
        )
        if not wanted:
            return {}
        if ctx.history is not None:
            known = {key: ctx.history[key] >> encoding.TIME_BITS for key in wanted if key in ctx.history}
        else:
            known = history.all_time_parts(game_id=ctx.config.game.id, wanted=wanted)
        out: dict[int, Verdict] = {}
        for i, match in ctx.matches.items():
            for r in match.results:
                board = ctx.board(r.board)
                known_part = known.get((board.id, r.player))
                if known_part is None:
                    continue
                previous = known_part // encoding.subradix(board)  # the score's part: sub-scores aside
                t = ctx.thresholds(r.board)
                part = encoding.score_part(board, r.score)
                if part > previous * t.history_factor and part - previous >= max(1, t.history_min_gap):
                    out[i] = Verdict(
                        "hold",
                        self.name,
                        f"{r.player!r} scored {r.score} on {r.board!r}, far above their best "
                        f"({encoding.decode_score_part(board, previous)})",
                        {"player": r.player, "board": r.board, "score": r.score},
                    )
                    break
        return out


def history_boards(config: GameConfig) -> set[int]:
    """The boards whose players' all-time values PlayerHistoryRule compares against."""
    return {
        b.id
        for b in config.boards.values()
        if b.mode == "best" and "all" in b.windows and thresholds_for(b.anticheat).history_factor
    }


class BoardTopRule:
    """A result above the board's recent top percentile by a margin (statistics of the last
    7 days, refreshed by beat; no verdict until `top_min_sample` results): hold."""

    name = "board_top"

    def check(self, ctx: Context) -> dict[int, Verdict]:
        out: dict[int, Verdict] = {}
        for i, match in ctx.matches.items():
            for r in match.results:
                board = ctx.board(r.board)
                t = ctx.thresholds(r.board)
                if not t.top_margin_percent:
                    continue
                stats = ctx.stats.get(board.id)
                if stats is None or stats.top_value_part is None:
                    continue
                if stats.sample < t.top_min_sample:
                    continue
                part = encoding.score_part(board, r.score)
                limit = stats.top_value_part * (1 + t.top_margin_percent / 100)
                if part > max(limit, stats.top_value_part):
                    out[i] = Verdict(
                        "hold",
                        self.name,
                        f"{r.player!r} scored {r.score} on {r.board!r}, more than {t.top_margin_percent:g}% beyond "
                        f"the board's recent top {100 - t.top_percentile:g}%",
                        {
                            "player": r.player,
                            "board": r.board,
                            "score": r.score,
                            "top_value_part": stats.top_value_part,
                        },
                    )
                    break
        return out


class ServerOutlierRule:
    """Results from a server key whose recent results are statistically out of line with the
    other servers' on the board (found by the periodic statistics job): hold."""

    name = "server_outlier"

    def check(self, ctx: Context) -> dict[int, Verdict]:
        if ctx.server_key is None:
            return {}
        out: dict[int, Verdict] = {}
        for i, match in ctx.matches.items():
            for r in match.results:
                if not ctx.thresholds(r.board).server_zscore:
                    continue
                stats = ctx.stats.get(ctx.board(r.board).id)
                if stats and ctx.server_key.pk in stats.outlier_keys:
                    out[i] = Verdict(
                        "hold",
                        self.name,
                        f"server key {ctx.server_key.key_id} submits results out of line with the other servers "
                        f"on {r.board!r}",
                        {"board": r.board, "server_key": ctx.server_key.key_id},
                    )
                    break
        return out


# The registry: order matters only in that rejects are decided before holds.
SYNC_RULES: list[Rule] = [MaxGainRule(), MaxRateRule(), PlayerHistoryRule(), BoardTopRule(), ServerOutlierRule()]


def evaluate(ctx: Context, rules: Sequence[Rule] | None = None) -> dict[int, list[Verdict]]:
    """Run the rules over the request's new matches. A rejected match is not shown to the
    rules after the one that rejected it; a held one collects every reason."""
    verdicts: dict[int, list[Verdict]] = defaultdict(list)
    for rule in SYNC_RULES if rules is None else rules:
        if not ctx.matches:
            break
        for i, verdict in rule.check(ctx).items():
            verdicts[i].append(verdict)
            if verdict.action == "reject":
                ctx.matches = {k: v for k, v in ctx.matches.items() if k != i}
    return dict(verdicts)
