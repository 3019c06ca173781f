"""Reads of a whole board window for the apps that copy or judge it (the freeze in seasons/):
the SQL on scores tables stays here, in the app that owns them."""

from __future__ import annotations

from typing import Any

from django.db import connection

from scores import encoding
from scores.selectors import _ORDER as ORDER  # the contract's order, as the board's reads use it
from scores.selectors import BoardConfig


def window_standings_sql(*, board: BoardConfig, window: str) -> tuple[str, list[Any]]:
    """One SELECT of every value of a board window in the contract's order, as
    (position, rank as displayed, player id, value, reached_at, encoded), and its parameters.

    For a set-based copy (INSERT ... SELECT): rows come out sorted by position, so the copy is
    written in the order it is read back."""
    rank = (
        f"RANK() OVER (ORDER BY pv.encoded >> {encoding.TIME_BITS} DESC)"
        if board.rank_display == "shared"
        else "ROW_NUMBER() OVER w"
    )
    sql = f"""
        SELECT ROW_NUMBER() OVER w, {rank}, pv.player_id, pv.value, pv.reached_at, pv.encoded
        FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
        WHERE pv.board_id = %s AND pv."window" = %s
        WINDOW w AS (ORDER BY {ORDER})
        ORDER BY {ORDER}
    """
    return sql, [board.id, window]


def window_top(*, board_id: int, window: str, limit: int) -> list[tuple[int, int, int]]:
    """The best `limit` values of a board window: (player id, encoded, value), best first."""
    with connection.cursor() as cur:
        cur.execute(
            'SELECT player_id, encoded, value FROM scores_playervalue WHERE board_id = %s AND "window" = %s '
            "ORDER BY encoded DESC LIMIT %s",
            [board_id, window, limit],
        )
        return cur.fetchall()
