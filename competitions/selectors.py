"""Tournaments' reads (docs/competitions.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from competitions.leagues import league_of, membership_of
from competitions.models import LeagueGroupFreeze, LeagueGroupStanding, TournamentSize
from competitions.tournaments import Tournament, tournament_of
from scores import encoding, pgarrays
from scores.selectors import BoardConfig, GameConfig, cached_game_config
from scores.selectors.players import profiles
from seasons.selectors import FrozenPart


@dataclass(frozen=True)
class TournamentRow:
    slug: str
    name: str
    state: str
    tournament: Tournament
    size: int


def tournaments_list(config: GameConfig, *, state: str | None, now: datetime) -> list[TournamentRow]:
    """The game's tournaments in `state` (all when None), by start, then slug."""
    found = [(b, t) for b in config.boards.values() if (t := tournament_of(b)) is not None]
    found = [(b, t) for b, t in found if state is None or t.state(now) == state]
    sizes = dict(TournamentSize.objects.filter(board_id__in=[b.id for b, _ in found]).values_list("board_id", "size"))
    rows = [TournamentRow(b.slug, b.name, t.state(now), t, sizes.get(b.id, 0)) for b, t in found]
    return sorted(rows, key=lambda r: (r.tournament.starts_at, r.slug))


def entries_joined(pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """Which of these (board id, player pk) have joined."""
    pairs = sorted(set(pairs))
    if not pairs:
        return set()
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT e.board_id, e.player_id FROM competitions_tournamententry e
            JOIN unnest(%s::bigint[], %s::bigint[]) AS u(b, p) ON e.board_id = u.b AND e.player_id = u.p
            """,
            [pgarrays.ints(b for b, _ in pairs), pgarrays.ints(p for _, p in pairs)],
        )
        return set(cur.fetchall())


def tournaments_joined(config: GameConfig, *, player_pk: int, now: datetime) -> list[TournamentRow]:
    """The game's tournaments this player joined, by start, then slug."""
    rows = tournaments_list(config, state=None, now=now)
    ids = {r.slug: config.boards[r.slug].id for r in rows}
    joined = entries_joined((ids[r.slug], player_pk) for r in rows)
    return [r for r in rows if (ids[r.slug], player_pk) in joined]


# --- leagues --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeagueEntry:
    rank: int
    player: str
    display_name: str
    score: int
    # the value's sub-scores by name (docs/api.md §2.3); None on a board that declares none
    subscores: dict[str, int] | None = None


@dataclass(frozen=True)
class LeagueGroupRead:
    """A player's league group in a season (docs/api.md §12.2): `tier` None when not placed."""

    window: str
    tier: str | None
    group: str | None
    entries: list[LeagueEntry]
    promote_until: int  # ranks 1 to this one move up a tier (0: none)
    relegate_from: int | None  # ranks from this one down move down a tier (None: none)


def league_group_read(cfg: BoardConfig, *, window: str, player_pk: int) -> LeagueGroupRead | None:
    """The group `player_pk` plays in over the season `window` ("season:<slug>"), its members
    with a value in the season in the board's order; None when the board is not a league."""
    league = league_of(cfg)
    if league is None:
        return None
    config = cached_game_config(cfg.game_slug)
    season_id = config.season_ids.get(window.removeprefix("season:")) if config else None
    membership = membership_of(cfg.id, season_id=season_id, player_pk=player_pk) if season_id else None
    if membership is None:
        return LeagueGroupRead(window, None, None, [], 0, None)
    frozen = group_freeze_latest(membership.group_id)
    if frozen is not None:  # the season is over: the group's frozen standings (its latest version)
        entries = [
            LeagueEntry(s.rank, s.player.external_id, s.player.display_name, s.value, _subscores(cfg, s.encoded))
            for s in group_standings_page(frozen, offset=0, limit=frozen.entries)
        ]
    else:
        found = profiles(cfg.id, window=window, pks=membership.member_pks)
        ranked = sorted(
            ((p.encoded, p) for p in found.values() if p.encoded is not None),
            key=lambda pair: (-pair[0], pair[1].external_id.encode()),
        )
        entries = [
            LeagueEntry(
                i + 1, p.external_id, p.display_name, encoding.decode_value(cfg, encoded), _subscores(cfg, encoded)
            )
            for i, (encoded, p) in enumerate(ranked)
        ]
    top = len(league.tiers) - 1
    # where promotion and relegation would overlap in a small group, promotion wins
    relegate_from = (
        max(len(entries) - league.relegate + 1, league.promote + 1)
        if membership.tier > 0 and league.relegate and entries
        else None
    )
    return LeagueGroupRead(
        window,
        league.tiers[membership.tier],
        str(membership.group_id),
        entries,
        league.promote if membership.tier < top else 0,
        relegate_from,
    )


def _subscores(cfg: BoardConfig, encoded: int) -> dict[str, int] | None:
    return encoding.decode_subscores(cfg, encoded) if cfg.subscores else None


def group_freeze_latest(group_id: int) -> LeagueGroupFreeze | None:
    return LeagueGroupFreeze.objects.filter(group_id=group_id).order_by("-version").first()


def group_standings_page(freeze: LeagueGroupFreeze, *, offset: int, limit: int) -> list[LeagueGroupStanding]:
    return list(
        LeagueGroupStanding.objects.filter(freeze=freeze, position__gt=offset, position__lte=offset + limit)
        .select_related("player")
        .order_by("position")
    )


def league_group_frozen(cfg: BoardConfig, *, window: str, group: str, version: int | None = None) -> FrozenPart | None:
    """The standings read's and the export's `?group=` (docs/competitions.md, "Leagues"): a group
    of this league board in the season `window`, as frozen at the season's close (its latest
    version, or `version`); None when there is no such group or version, or it is not frozen
    yet. Registered with seasons.selectors."""
    if league_of(cfg) is None or not window.startswith("season:") or not group.isdigit():
        return None
    config = cached_game_config(cfg.game_slug)
    season_id = config.season_ids.get(window.removeprefix("season:")) if config else None
    if season_id is None:
        return None
    freezes = LeagueGroupFreeze.objects.filter(group_id=int(group), group__board_id=cfg.id, group__season_id=season_id)
    if version is not None:
        freezes = freezes.filter(version=version)
    freeze = freezes.order_by("-version").first()
    if freeze is None:
        return None
    return FrozenPart(
        freeze.version,
        freeze.frozen_at,
        freeze.entries,
        lambda offset, limit: group_standings_page(freeze, offset=offset, limit=limit),
    )
