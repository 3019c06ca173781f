"""Reads of the per-player values (scores_playervalue) that the ranking index is built and
repaired from (boards/services.py, boards/rolling.py, boards/healing.py). Raw SQL on scores'
tables lives here, in scores/, by the layer rule; boards/ only consumes the rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from django.db import connection, transaction

from scores import pgarrays

Value = tuple[int, str, int, int]  # board_id, window, player_id, encoded
CHUNK = 20_000


def values_of(refs: Iterable[tuple[int, str, int]], *, lock: bool = False) -> list[Value]:
    """The values Postgres holds now for (board_id, window, player_id) references. `lock`:
    FOR SHARE, in a stable order, inside the caller's transaction (moderation's rewrite)."""
    refs = set(refs)
    if not refs:
        return []
    b, w, p = zip(*refs, strict=True)
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT pv.board_id, pv."window", pv.player_id, pv.encoded
            FROM unnest(%s::bigint[], %s::text[], %s::bigint[]) AS u(b, w, p)
            JOIN scores_playervalue pv ON pv.board_id = u.b AND pv."window" = u.w AND pv.player_id = u.p
            """
            + (' ORDER BY pv.board_id, pv."window", pv.player_id FOR SHARE OF pv' if lock else ""),
            [pgarrays.ints(b), pgarrays.texts(w), pgarrays.ints(p)],
        )
        return cur.fetchall()


def board_values_stream(board_id: int, *, chunk: int = CHUNK) -> Iterator[list[tuple[str, str, int]]]:
    """Every (window, player_id as text, encoded) of a board, in chunks, from one snapshot
    (the id as text because that is how the sorted sets hold it)."""
    with transaction.atomic(), connection.chunked_cursor() as cur:
        cur.execute(
            'SELECT "window", player_id::text, encoded FROM scores_playervalue WHERE board_id = %s '
            'ORDER BY "window", encoded DESC, player_id',
            [board_id],
        )
        while rows := cur.fetchmany(chunk):
            yield rows


def values_updated_since(board_ids: list[int], *, since: datetime) -> list[Value]:
    """Values of these boards written at or after `since` (updated_at is stamped by the upsert)."""
    with connection.cursor() as cur:
        cur.execute(
            'SELECT board_id, "window", player_id, encoded FROM scores_playervalue '
            "WHERE board_id = ANY(%s) AND updated_at >= %s",
            [board_ids, since],
        )
        return cur.fetchall()


def window_sample(board_id: int, *, window: str, player_ids: list[int]) -> dict[int, int]:
    """player_id -> encoded for these players of one board window (those with a value)."""
    if not player_ids:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            'SELECT player_id, encoded FROM scores_playervalue WHERE board_id = %s AND "window" = %s '
            "AND player_id = ANY(%s)",
            [board_id, window, pgarrays.ints(player_ids)],
        )
        return dict(cur.fetchall())


def window_random_players(board_id: int, *, window: str, count: int) -> dict[int, int]:
    """About `count` random players of a board window with their encoded values (TABLESAMPLE
    would sample the whole table; an index range from a random player id stays cheap)."""
    with connection.cursor() as cur:
        cur.execute(
            'SELECT player_id, encoded FROM scores_playervalue WHERE board_id = %s AND "window" = %s '
            "AND player_id >= (SELECT floor(random() * (COALESCE(MAX(player_id), 0) + 1))::bigint "
            'FROM scores_playervalue WHERE board_id = %s AND "window" = %s) ORDER BY player_id LIMIT %s',
            [board_id, window, board_id, window, count],
        )
        return dict(cur.fetchall())


# A player's best over days whose sorted set has left Redis: the largest encoded score.
_BEST_SQL = """
SELECT player_id, MAX(encoded)
FROM scores_playervalue
WHERE board_id = %s AND "window" = ANY(%s)
GROUP BY player_id
"""

# One row per player over the window's daily rows. reached_at follows total_reached_at():
# the latest moment among the days that added something, else the earliest.
_TOTALS_SQL = """
SELECT player_id, SUM(value)::bigint,
       COALESCE(MAX(reached_at) FILTER (WHERE value > 0), MIN(reached_at))
FROM scores_playervalue
WHERE board_id = %s AND "window" = ANY(%s)
GROUP BY player_id
"""


def _stream(sql: str, params: list, chunk: int) -> Iterator[list[tuple]]:
    with transaction.atomic(), connection.chunked_cursor() as cur:
        cur.execute(sql, params)
        while rows := cur.fetchmany(chunk):
            yield rows


def best_over_days_stream(board_id: int, *, days: list[str], chunk: int = CHUNK) -> Iterator[list[tuple[int, int]]]:
    """(player_id, best encoded) over these daily windows, in chunks (rolling windows)."""
    return _stream(_BEST_SQL, [board_id, days], chunk)


def totals_over_days_stream(
    board_id: int, *, days: list[str], chunk: int = CHUNK
) -> Iterator[list[tuple[int, int, datetime]]]:
    """(player_id, total, reached_at) over these daily windows, in chunks (rolling windows)."""
    return _stream(_TOTALS_SQL, [board_id, days], chunk)
