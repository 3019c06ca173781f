"""Tournaments' writes (docs/competitions.md): joins and attempts, each counted by one
conditional statement so that concurrent requests never pass max_size or max_attempts."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import connection, transaction

from competitions.tournaments import tournament_of
from leaderboard_project.errors import Conflict
from scores import pgarrays
from scores.models import Game, Player
from scores.selectors import BoardConfig, game_config, held_touching_top
from seasons.models import WindowFreeze
from seasons.services import window_cutoff_lift, window_freeze

log = logging.getLogger(__name__)


class TournamentFull(Conflict):
    code = "tournament_full"


class TournamentEnded(Conflict):
    code = "tournament_ended"


def tournament_join(board: BoardConfig, *, player_external_id: str, now: datetime) -> int:
    """Join the player (created if new) to the tournament; returns its size. Joining twice is
    harmless. Raises TournamentEnded or TournamentFull (409), and then nothing is written."""
    tournament = tournament_of(board)
    assert tournament is not None
    if tournament.state(now) == "ended":
        raise TournamentEnded(f"tournament {board.slug!r} ended at {tournament.ends_at.isoformat()}")
    with transaction.atomic():
        player, _ = Player.objects.get_or_create(game_id=board.game_id, external_id=player_external_id)
        with connection.cursor() as cur:
            cur.execute(
                "INSERT INTO competitions_tournamentsize (board_id, size) VALUES (%s, 0) ON CONFLICT DO NOTHING",
                [board.id],
            )
            # the unique (board, player) decides a player's two racing joins: the second waits
            # for the first and then inserts nothing
            cur.execute(
                """
                INSERT INTO competitions_tournamententry (board_id, player_id, joined_at) VALUES (%s, %s, now())
                ON CONFLICT (board_id, player_id) DO NOTHING RETURNING id
                """,
                [board.id, player.pk],
            )
            if cur.fetchone() is None:
                cur.execute("SELECT size FROM competitions_tournamentsize WHERE board_id = %s", [board.id])
                return cur.fetchone()[0]
            # one row per tournament: concurrent joins queue on its lock, and each re-checks
            # the condition on the row the one before it committed
            cur.execute(
                """
                UPDATE competitions_tournamentsize SET size = size + 1
                WHERE board_id = %s AND (%s = 0 OR size < %s) RETURNING size
                """,
                [board.id, tournament.max_size, tournament.max_size],
            )
            row = cur.fetchone()
            if row is None:  # raising rolls the entry back
                raise TournamentFull(f"tournament {board.slug!r} is full ({tournament.max_size} players)")
            return row[0]


AttemptKey = tuple[int, int, str]  # (board id, player pk, period)


def attempts_take(wanted: Sequence[tuple[AttemptKey, int]]) -> dict[AttemptKey, int]:
    """Count results against max_attempts (each key with its cap) inside the caller's
    transaction; returns how many each key was granted (at most what was asked, never past the
    cap, whatever runs at the same time). Rows are locked in one order: no deadlock between
    two submissions touching the same players."""
    asked = Counter(key for key, _ in wanted)
    caps = dict(wanted)
    keys = sorted(asked)
    if not keys:
        return {}
    boards = pgarrays.ints(k[0] for k in keys)
    players = pgarrays.ints(k[1] for k in keys)
    periods = pgarrays.texts(k[2] for k in keys)
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO competitions_tournamentattempt (board_id, player_id, period, used, granted)
            SELECT u.b, u.p, u.per, 0, 0 FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) AS u(b, p, per)
            ORDER BY u.b, u.p, u.per
            ON CONFLICT (board_id, player_id, period) DO NOTHING
            """,
            [boards, players, periods],
        )
        cur.execute(
            """
            SELECT 1 FROM competitions_tournamentattempt a
            JOIN unnest(%s::bigint[], %s::bigint[], %s::text[]) AS u(b, p, per)
              ON a.board_id = u.b AND a.player_id = u.p AND a.period = u.per
            ORDER BY a.board_id, a.player_id, a.period
            FOR UPDATE OF a
            """,
            [boards, players, periods],
        )
        # SET's right-hand sides read the row as it was: `granted` is what this UPDATE adds
        cur.execute(
            """
            UPDATE competitions_tournamentattempt a
            SET used = LEAST(a.used + u.n, u.cap), granted = LEAST(u.n, u.cap - a.used)
            FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::int[], %s::int[]) AS u(b, p, per, n, cap)
            WHERE a.board_id = u.b AND a.player_id = u.p AND a.period = u.per AND a.used < u.cap
            RETURNING a.board_id, a.player_id, a.period, a.granted
            """,
            [
                boards,
                players,
                periods,
                pgarrays.ints(asked[k] for k in keys),
                pgarrays.ints(caps[k] for k in keys),
            ],
        )
        return {(b, p, per): granted for b, p, per, granted in cur.fetchall()}


# --- a tournament's end -------------------------------------------------------------------------

HELD_TOP = 1000  # as a season's close: held matches touching the top this deep hold the end back


def tournaments_close(*, now: datetime) -> list[str]:
    """Freeze the `all` window of every tournament that ended more than the game's grace period
    ago and is not frozen yet: its final standings, whose freeze writes the `tournament.ended`
    settlement event (competitions/webhooks.py) in its transaction. Results are refused from
    `ends_at` on (by the match's time); the grace lets those that ended before it arrive. Running
    it twice freezes once (window_freeze does nothing when a version exists). Returns the
    tournaments frozen now, as "game/board"."""
    frozen = []
    for game in Game.objects.order_by("id"):
        try:
            config = game_config(game)
        except Exception:
            log.exception("ending tournaments: the configuration of %s does not load", game.slug)
            continue
        grace = timedelta(seconds=game.close_grace_seconds)
        for board in config.boards.values():
            tournament = tournament_of(board)
            if tournament is None or tournament.ends_at + grace > now:
                continue
            if WindowFreeze.objects.filter(board_id=board.id, window="all").exists():
                continue
            held = held_touching_top(
                board, window="all", start=tournament.starts_at, end=tournament.ends_at, top=HELD_TOP
            )
            if held:
                log.info("tournament %s/%s waits for %d held match(es)", game.slug, board.slug, len(held))
                continue
            try:
                if window_freeze(board=board, window="all", reason="tournament ended") is not None:
                    frozen.append(f"{game.slug}/{board.slug}")
            except Exception:
                # this tournament's alone: the others still end; the next run tries it again,
                # and until then its late results count (docs/windows.md)
                log.exception("ending tournament %s/%s failed", game.slug, board.slug)
                window_cutoff_lift(board, window="all", config=config)
    return frozen
