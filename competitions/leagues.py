"""Leagues (docs/api.md §12.2, docs/competitions.md): a board's `[boards.league]` table, placing a
player in a group of their tier on their first result of a season (inside the submission's
transaction, through scores/ingest/refusals.py), and promotion and relegation from each
group's frozen standings (inside the season freeze's transaction, through seasons' freeze hook)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper

from scores import encoding, events, pgarrays
from scores.ingest import MatchIn
from scores.ingest.refusals import Refused
from scores.models import Season
from scores.selectors import BoardConfig, GameConfig, cached_game_config, player_external_ids
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
        for member_id, board_id, season_id, tier in sorted(cur.fetchall()):
            _seat(cur, member_id=member_id, board_id=board_id, season_id=season_id, tier=tier, cap=sizes[board_id])


def _seat(cur: CursorWrapper, *, member_id: int, board_id: int, season_id: int, tier: int, cap: int) -> None:
    """Seat a member (group_id NULL) in the oldest open group of the tier, else a new one."""
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
        {"b": board_id, "s": season_id, "t": tier, "cap": cap},
    )
    row = cur.fetchone()
    if row is None:  # none open (or the one found filled meanwhile): a new group
        cur.execute(
            "INSERT INTO competitions_leaguegroup (board_id, season_id, tier, size) VALUES (%s, %s, %s, 1) RETURNING id",
            [board_id, season_id, tier],
        )
        row = cur.fetchone()
    cur.execute("UPDATE competitions_leaguemember SET group_id = %s WHERE id = %s", [row[0], member_id])


# --- freezing the groups, promotion and relegation, in the season freeze's transaction -----------


@dataclass(frozen=True)
class _Row:
    """A member's place in a group's frozen standings."""

    player_id: int
    rank: int
    value: int
    reached_at: datetime
    encoded: int
    tier_next: int

    def shown(self) -> tuple[int, int, int, int]:
        """What the group's standings show of this row (player, rank, score and its sub-scores):
        a re-freeze writes a group's next version only when one of these changed."""
        return self.player_id, self.rank, self.value, self.encoded >> encoding.TIME_BITS


def league_settle(board: BoardConfig, *, freeze: WindowFreeze, previous: WindowFreeze | None) -> None:
    """Freeze each group of the season from this version of the season's frozen standings: the
    group's members in the season's frozen order, ranked within the group, each with the tier
    that order gives them next season (the top `promote` up a tier, the bottom `relegate` down,
    within the tiers; members with no standing left keep theirs). A group's first freeze is its
    version 1; a re-freeze (after a void) writes a group's next version only where its standings
    changed, rewrites those members' outcome, and moves a member the next season already placed
    in the old tier into a group of the corrected one."""
    league = league_of(board)
    if league is None or not freeze.window.startswith("season:"):
        return
    config = cached_game_config(board.game_slug, stale_ok=False)
    season_id = config.season_ids.get(freeze.window.removeprefix("season:")) if config else None
    if season_id is None:
        return
    frozen = {
        p: (position, rank, value, reached_at, encoded)
        for p, position, rank, value, reached_at, encoded in FrozenStanding.objects.using("default")
        .filter(freeze=freeze)
        .values_list("player_id", "position", "rank", "value", "reached_at", "encoded")
    }
    groups: dict[int, list[tuple[int, int]]] = {}
    for player_id, group_id, tier in _members(board.id, season_id):
        groups.setdefault(group_id, []).append((player_id, tier))
    latest = _latest_group_freezes(board.id, season_id)
    top = len(league.tiers) - 1
    versions: list[tuple[int, int, list[_Row]]] = []  # (group, version, rows) to write
    outcome: list[tuple[int, int]] = []  # (player, tier next season) of the groups written
    for group_id in sorted(groups):
        members = groups[group_id]
        ordered = sorted((frozen[p][0], p, t) for p, t in members if p in frozen)
        rows: list[_Row] = []
        for i, (_, player_id, tier) in enumerate(ordered):
            _, season_rank, value, reached_at, encoded = frozen[player_id]
            # equal season ranks (a shared-rank board's ties) share the group rank too
            rank = rows[-1].rank if rows and frozen[rows[-1].player_id][1] == season_rank else i + 1
            if i < league.promote:
                tier = min(tier + 1, top)
            elif i >= len(ordered) - league.relegate:
                tier = max(tier - 1, 0)
            rows.append(_Row(player_id, rank, value, reached_at, encoded, tier))
        before = latest.get(group_id)
        if before is not None and before[1] == [r.shown() for r in rows]:
            continue  # this group's standings did not change: its frozen version stands
        versions.append((group_id, before[0] + 1 if before else 1, rows))
        kept = {r.player_id for r in rows}
        outcome += [(r.player_id, r.tier_next) for r in rows] + [(p, t) for p, t in members if p not in kept]
    if not versions:
        return
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO competitions_leaguegroupfreeze (group_id, version, season_freeze_id, frozen_at, entries)
            SELECT u.g, u.v, %s, now(), u.n FROM unnest(%s::bigint[], %s::int[], %s::int[]) AS u(g, v, n)
            RETURNING group_id, id
            """,
            [
                freeze.id,
                pgarrays.ints(g for g, _, _ in versions),
                pgarrays.ints(v for _, v, _ in versions),
                pgarrays.ints(len(rows) for _, _, rows in versions),
            ],
        )
        ids = dict(cur.fetchall())
        flat = [(ids[g], i + 1, r) for g, _, rows in versions for i, r in enumerate(rows)]
        if flat:
            cur.execute(
                """
                INSERT INTO competitions_leaguegroupstanding
                    (freeze_id, position, rank, player_id, value, reached_at, encoded, tier_next)
                SELECT * FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::bigint[], %s::bigint[],
                                     %s::timestamptz[], %s::bigint[], %s::int[])
                """,
                [
                    pgarrays.ints(f for f, _, _ in flat),
                    pgarrays.ints(pos for _, pos, _ in flat),
                    pgarrays.ints(r.rank for _, _, r in flat),
                    pgarrays.ints(r.player_id for _, _, r in flat),
                    pgarrays.ints(r.value for _, _, r in flat),
                    [r.reached_at for _, _, r in flat],
                    pgarrays.ints(r.encoded for _, _, r in flat),
                    pgarrays.ints(r.tier_next for _, _, r in flat),
                ],
            )
        outcome.sort()
        # only the outcomes that changed (or are new) come back: those may need a correction
        cur.execute(
            """
            INSERT INTO competitions_leagueoutcome AS o (board_id, season_id, player_id, tier_next)
            SELECT %s, %s, u.p, u.t FROM unnest(%s::bigint[], %s::int[]) AS u(p, t)
            ON CONFLICT (board_id, season_id, player_id) DO UPDATE SET tier_next = EXCLUDED.tier_next
            WHERE o.tier_next IS DISTINCT FROM EXCLUDED.tier_next
            RETURNING player_id, tier_next, xmax <> 0
            """,
            [board.id, season_id, pgarrays.ints(p for p, _ in outcome), pgarrays.ints(t for _, t in outcome)],
        )
        returned = sorted(cur.fetchall())
        _moves_draft(board, league, groups, returned)
        changed = [(p, t) for p, t, _ in returned]
        if changed:
            _next_season_correct(cur, board, season_id=season_id, changed=changed, cap=league.size)


def _moves_draft(
    board: BoardConfig,
    league: League,
    groups: dict[int, list[tuple[int, int]]],
    returned: list[tuple[int, int, bool]],
) -> None:
    """league.moved for each player whose next tier differs from this season's, and for each
    outcome a re-freeze corrected (even back to the same tier: it undoes a move told before)."""
    season_tier = {p: t for members in groups.values() for p, t in members}
    moves = [(p, season_tier[p], t) for p, t, corrected in returned if corrected or season_tier.get(p, t) != t]
    if not moves:
        return
    external = player_external_ids(p for p, _, _ in moves)
    at = events.event_at()
    events.events_draft(
        game_id=board.game_id,
        events=[
            events.event(
                events.LEAGUE_MOVED,
                {"player": external[p], "board": board.slug, "from_tier": league.tiers[a], "to_tier": league.tiers[b]},
                at=at,
            )
            for p, a, b in moves
        ],
    )


def _next_season_correct(
    cur: CursorWrapper, board: BoardConfig, *, season_id: int, changed: list[tuple[int, int]], cap: int
) -> None:
    """Players the next season already placed (their first result of it came before this
    season's freeze, or before a void changed their outcome) in another tier than this
    season's outcome now gives them: each leaves their group (its seat frees) and takes a seat
    in a group of the corrected tier. Not once the next season is itself frozen: its groups'
    standings are then final."""
    this = Season.objects.filter(pk=season_id).values_list("starts_at", flat=True).first()
    following = (
        Season.objects.filter(game_id=board.game_id, starts_at__gt=this).order_by("starts_at", "id").first()
        if this
        else None
    )
    if following is None or WindowFreeze.objects.filter(board_id=board.id, window=f"season:{following.slug}").exists():
        return
    for player_id, tier in changed:
        cur.execute(
            """
            WITH old AS (
                SELECT id, group_id FROM competitions_leaguemember
                WHERE board_id = %s AND season_id = %s AND player_id = %s AND tier <> %s
                FOR UPDATE
            )
            UPDATE competitions_leaguemember m SET tier = %s, group_id = NULL FROM old
            WHERE m.id = old.id RETURNING m.id, old.group_id
            """,
            [board.id, following.id, player_id, tier, tier],
        )
        row = cur.fetchone()
        if row is None:
            continue  # not placed in the next season yet (placement reads the outcome), or already right
        member_id, old_group = row
        if old_group is not None:
            cur.execute("UPDATE competitions_leaguegroup SET size = size - 1 WHERE id = %s AND size > 0", [old_group])
        _seat(cur, member_id=member_id, board_id=board.id, season_id=following.id, tier=tier, cap=cap)


def _members(board_id: int, season_id: int) -> list[tuple[int, int, int]]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT player_id, group_id, tier FROM competitions_leaguemember WHERE board_id = %s AND season_id = %s",
            [board_id, season_id],
        )
        return cur.fetchall()


def _latest_group_freezes(board_id: int, season_id: int) -> dict[int, tuple[int, list[tuple[int, int, int, int]]]]:
    """Each frozen group's latest version and what its standings show (_Row.shown): group ->
    (version, [(player, rank, value, value part of the encoded score)])."""
    with connection.cursor() as cur:
        cur.execute(
            f"""
            SELECT f.group_id, f.version, s.player_id, s.rank, s.value, s.encoded >> {encoding.TIME_BITS}
            FROM (
                SELECT DISTINCT ON (f.group_id) f.id, f.group_id, f.version
                FROM competitions_leaguegroupfreeze f
                JOIN competitions_leaguegroup g ON g.id = f.group_id
                WHERE g.board_id = %s AND g.season_id = %s
                ORDER BY f.group_id, f.version DESC
            ) f
            LEFT JOIN competitions_leaguegroupstanding s ON s.freeze_id = f.id
            ORDER BY f.group_id, s.position
            """,
            [board_id, season_id],
        )
        out: dict[int, tuple[int, list[tuple[int, int, int, int]]]] = {}
        for group_id, version, player_id, rank, value, part in cur.fetchall():
            _, rows = out.setdefault(group_id, (version, []))
            if player_id is not None:
                rows.append((player_id, rank, value, part))
        return out


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
