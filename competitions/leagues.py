"""Leagues (contract 13.6, docs/competitions.md): a board's `[boards.league]` table, placing a
player in a group of their tier on their first result of a season (inside the submission's
transaction, through scores/ingest/refusals.py), and promotion and relegation from each
group's frozen standings (inside the season freeze's transaction, through seasons' freeze hook)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import connection

from scores import pgarrays
from scores.ingest import MatchIn
from scores.ingest.refusals import Refused
from scores.selectors import BoardConfig, GameConfig
from scores.windows import seasons_at
from seasons.models import FrozenStanding, WindowFreeze

_KEYS = {"tiers", "size", "promote", "relegate"}
_TIER = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
MAX_TIERS = 20


@dataclass(frozen=True)
class League:
    tiers: tuple[str, ...]  # lowest first
    size: int
    promote: int
    relegate: int


def league_of(board: BoardConfig) -> League | None:
    spec = board.league
    if spec is None:
        return None
    return League(tuple(spec["tiers"]), int(spec["size"]), int(spec["promote"]), int(spec["relegate"]))


def league_parse(table: Any) -> dict[str, Any]:
    """The table's settings; raises ValueError(key, message) naming the key."""
    if not isinstance(table, dict):
        raise ValueError("", "a table is required: [boards.league]")
    for key in table:
        if key not in _KEYS:
            raise ValueError(key, f"unknown key (expected one of: {', '.join(sorted(_KEYS))})")
    tiers = table.get("tiers")
    if (
        not isinstance(tiers, list)
        or not 1 <= len(tiers) <= MAX_TIERS
        or not all(isinstance(t, str) and _TIER.match(t) for t in tiers)
    ):
        raise ValueError("tiers", f'a list of 1-{MAX_TIERS} tier names, lowest first, like ["bronze", "silver"]')
    if len(set(tiers)) != len(tiers):
        raise ValueError("tiers", "lists a tier twice")
    size = _count(table, "size", low=2, default=None)
    promote = _count(table, "promote", low=0, default=0)
    relegate = _count(table, "relegate", low=0, default=0)
    if promote + relegate > size:
        raise ValueError("relegate", f"promote + relegate ({promote + relegate}) is more than size ({size})")
    return {"tiers": tiers, "size": size, "promote": promote, "relegate": relegate}


def _count(table: dict[str, Any], key: str, *, low: int, default: int | None) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(key, "an integer is required")
    if value < low:
        raise ValueError(key, f"must be at least {low}")
    if value > 100_000:
        raise ValueError(key, "must be at most 100000")
    return value


# --- placement, in the submission's transaction ----------------------------------------------


class LeaguePlacement:
    """Refuses nothing: places each player with a first result of a season in a group."""

    def refuse(self, *, config: GameConfig, matches: dict[int, MatchIn], player_ids: dict[str, int]) -> Refused:
        leagues = {slug: b for slug, b in config.boards.items() if b.league is not None}
        if not leagues:
            return {}
        wanted: set[tuple[int, int, int]] = set()  # (board id, season id, player pk)
        for match in matches.values():
            spans = seasons_at(match.ended_at, config.seasons)
            for r in match.results:
                if r.board in leagues:
                    for span in spans:
                        wanted.add((leagues[r.board].id, config.season_ids[span.slug], player_ids[r.player]))
        if wanted:
            sizes = {b.id: league_of(b).size for b in leagues.values()}
            members_place(sorted(wanted), sizes=sizes)
        return {}


def members_place(keys: list[tuple[int, int, int]], *, sizes: dict[int, int]) -> None:
    """Place the (board, season, player) not placed yet. The unique member row decides who is
    new (a racing request for the same player waits, then inserts nothing); each new member
    then takes a seat in the oldest open group of their tier with a conditional UPDATE (`size <
    league size`: concurrent placements queue on the group's row and re-check it), or opens a
    new group. A group never has more than `size` members."""
    boards = pgarrays.ints(k[0] for k in keys)
    seasons = pgarrays.ints(k[1] for k in keys)
    players = pgarrays.ints(k[2] for k in keys)
    with connection.cursor() as cur:
        # the tier: what the player's latest earlier season of this league settled, else the lowest
        cur.execute(
            """
            INSERT INTO competitions_leaguemember (board_id, season_id, player_id, tier, group_id)
            SELECT u.b, u.s, u.p, COALESCE((
                SELECT o.tier_next FROM competitions_leagueoutcome o
                JOIN scores_season os ON os.id = o.season_id
                WHERE o.board_id = u.b AND o.player_id = u.p
                  AND os.starts_at < (SELECT starts_at FROM scores_season WHERE id = u.s)
                ORDER BY os.starts_at DESC LIMIT 1
            ), 0), NULL
            FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(b, s, p)
            ORDER BY u.b, u.s, u.p
            ON CONFLICT (board_id, season_id, player_id) DO NOTHING
            RETURNING id, board_id, season_id, tier
            """,
            [boards, seasons, players],
        )
        new = sorted(cur.fetchall())
        for member_id, board_id, season_id, tier in new:
            cur.execute(
                """
                UPDATE competitions_leaguegroup g SET size = g.size + 1
                WHERE g.id = (
                    SELECT id FROM competitions_leaguegroup
                    WHERE board_id = %(b)s AND season_id = %(s)s AND tier = %(t)s AND size < %(cap)s
                    ORDER BY id LIMIT 1 FOR UPDATE
                ) AND g.size < %(cap)s
                RETURNING g.id
                """,
                {"b": board_id, "s": season_id, "t": tier, "cap": sizes[board_id]},
            )
            row = cur.fetchone()
            if row is None:  # none open (or the one found filled meanwhile): a new group
                cur.execute(
                    """
                    INSERT INTO competitions_leaguegroup (board_id, season_id, tier, size)
                    VALUES (%s, %s, %s, 1) RETURNING id
                    """,
                    [board_id, season_id, tier],
                )
                row = cur.fetchone()
            cur.execute("UPDATE competitions_leaguemember SET group_id = %s WHERE id = %s", [row[0], member_id])


# --- promotion and relegation, in the season freeze's transaction -----------------------------


def league_settle(board: BoardConfig, *, freeze: WindowFreeze, previous: WindowFreeze | None) -> None:
    """From a season's frozen standings: in each group, in the frozen order, the top `promote`
    go up a tier and the bottom `relegate` down (within the tiers), the others stay. A re-freeze
    rewrites the outcome (ON CONFLICT DO UPDATE): a void corrects the next season's tier."""
    league = league_of(board)
    if league is None or not freeze.window.startswith("season:"):
        return
    season_id = next(
        (s for slug, s in _season_ids(board).items() if f"season:{slug}" == freeze.window),
        None,
    )
    if season_id is None:
        return
    positions = dict(FrozenStanding.objects.using("default").filter(freeze=freeze).values_list("player_id", "position"))
    groups: dict[int, list[tuple[int, int]]] = {}
    for player_id, group_id, tier in _members(board.id, season_id):
        groups.setdefault(group_id, []).append((player_id, tier))
    outcome: list[tuple[int, int]] = []
    top = len(league.tiers) - 1
    for members in groups.values():
        ranked = sorted((positions[p], p, t) for p, t in members if p in positions)
        n = len(ranked)
        for i, (_, player_id, tier) in enumerate(ranked):
            if i < league.promote:
                tier = min(tier + 1, top)
            elif i >= n - league.relegate and i >= league.promote:
                tier = max(tier - 1, 0)
            outcome.append((player_id, tier))
        # members with no standing left (every result voided) keep their tier
        outcome += [(p, t) for p, t in members if p not in positions]
    if not outcome:
        return
    outcome.sort()
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO competitions_leagueoutcome (board_id, season_id, player_id, tier_next)
            SELECT %s, %s, u.p, u.t FROM unnest(%s::bigint[], %s::int[]) AS u(p, t)
            ON CONFLICT (board_id, season_id, player_id) DO UPDATE SET tier_next = EXCLUDED.tier_next
            """,
            [board.id, season_id, pgarrays.ints(p for p, _ in outcome), pgarrays.ints(t for _, t in outcome)],
        )


def _season_ids(board: BoardConfig) -> dict[str, int]:
    from scores.selectors import cached_game_config

    config = cached_game_config(board.game_slug, stale_ok=False)
    return dict(config.season_ids) if config else {}


def _members(board_id: int, season_id: int) -> list[tuple[int, int, int]]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT player_id, group_id, tier FROM competitions_leaguemember WHERE board_id = %s AND season_id = %s",
            [board_id, season_id],
        )
        return cur.fetchall()


# --- reads --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Membership:
    group_id: int
    tier: int
    member_pks: list[int]


def membership_of(board_id: int, *, season_id: int, player_pk: int) -> Membership | None:
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT m.group_id, m.tier, array_agg(o.player_id ORDER BY o.player_id)
            FROM competitions_leaguemember m
            JOIN competitions_leaguemember o ON o.group_id = m.group_id
            WHERE m.board_id = %s AND m.season_id = %s AND m.player_id = %s
            GROUP BY m.group_id, m.tier
            """,
            [board_id, season_id, player_pk],
        )
        row = cur.fetchone()
    return Membership(row[0], row[1], list(row[2])) if row else None
