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


def previous_scores(*, wanted: list[tuple[int, int, int]], limit: int = 20) -> dict[tuple[int, int, int], list[int]]:
    """(player pk, board pk, match pk) -> the player's scores on the board in their last
    `limit` accepted matches before that match, newest first. One statement for the whole
    list (the (player, board) index, once per entry): the after-the-fact check asks for a
    drain chunk's results at a time."""
    wanted = list(dict.fromkeys(wanted))
    if not wanted:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT u.p, u.b, u.m, prev.score
            FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(p, b, m)
            CROSS JOIN LATERAL (
                SELECT r.score, r.match_id FROM scores_result r JOIN scores_match m ON m.id = r.match_id
                WHERE r.player_id = u.p AND r.board_id = u.b AND m.status = 'accepted' AND r.match_id < u.m
                ORDER BY r.match_id DESC LIMIT %s
            ) prev
            ORDER BY u.p, u.b, u.m, prev.match_id DESC
            """,
            [
                pgarrays.ints(p for p, _, _ in wanted),
                pgarrays.ints(b for _, b, _ in wanted),
                pgarrays.ints(m for _, _, m in wanted),
                limit,
            ],
        )
        out: dict[tuple[int, int, int], list[int]] = {key: [] for key in wanted}
        for p, b, m, score in cur.fetchall():
            out[(p, b, m)].append(score)
        return out


def recent_value_parts(*, board: BoardConfig, since: datetime) -> list[tuple[int | None, int]]:
    """(server key pk, value part) of every accepted result on the board received since then.
    Only the recent days' partitions are read: a match received lately that ended more than a
    day before it arrived is left out (these feed statistics, not rules)."""
    part = "r.score" if board.mode == "total" else encoding.sql_score_part(board, "r.score")
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
