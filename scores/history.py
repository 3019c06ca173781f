"""Reads of players' past results and values that the anti-cheat rules compare against
(anticheat/ calls these; the tables are this app's)."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from scores import encoding, pgarrays
from scores.selectors import BoardConfig


def all_time_parts(*, game_id: int, wanted: list[tuple[int, str]]) -> dict[tuple[int, str], int]:
    """(board_id, external player id) -> value part of the player's all-time value on the board,
    for those who have one."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT pv.board_id, p.external_id, pv.encoded >> %s
            FROM unnest(%s::bigint[], %s::text[]) AS u(b, p)
            JOIN scores_player p ON p.game_id = %s AND p.external_id = u.p
            JOIN scores_playervalue pv ON pv.board_id = u.b AND pv."window" = 'all' AND pv.player_id = p.id
            """,
            [encoding.TIME_BITS, pgarrays.ints(b for b, _ in wanted), pgarrays.texts(p for _, p in wanted), game_id],
        )
        return {(b, p): part for b, p, part in cur.fetchall()}


def previous_scores(*, player_id: int, board_id: int, before_match: int, limit: int = 20) -> list[int]:
    """The player's scores on the board in their last `limit` accepted matches before this one,
    newest first (the (player, board) index)."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT r.score FROM scores_result r JOIN scores_match m ON m.id = r.match_id
            WHERE r.player_id = %s AND r.board_id = %s AND m.status = 'accepted' AND r.match_id < %s
            ORDER BY r.match_id DESC LIMIT %s
            """,
            [player_id, board_id, before_match, limit],
        )
        return [score for (score,) in cur.fetchall()]


def recent_value_parts(*, board: BoardConfig, since: datetime) -> list[tuple[int | None, int]]:
    """(server key pk, value part) of every accepted result on the board received since then.
    Only the recent days' partitions are read: a match received lately that ended more than a
    day before it arrived is left out (these feed statistics, not rules)."""
    part = "r.score" if board.mode == "total" else encoding.sql_value_part(board, "r.score")
    with connection.cursor() as cur:
        cur.execute(
            f"""
            SELECT m.server_key_id, {part} AS vp
            FROM scores_result r JOIN scores_match m ON m.id = r.match_id
            WHERE r.board_id = %(board)s AND r.ended_at >= %(since)s - interval '1 day'
                AND m.status = 'accepted' AND m.received_at >= %(since)s
            """,
            {"board": board.id, "since": since, **encoding.sql_params(board)},
        )
        return cur.fetchall()
