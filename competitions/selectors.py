"""Tournaments' reads (docs/competitions.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from competitions.models import TournamentSize
from competitions.tournaments import Tournament, tournament_of
from scores import pgarrays
from scores.selectors import GameConfig


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
