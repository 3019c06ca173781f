"""Reads of board windows' values (scores_playervalue), the one home of raw SQL on that table
outside the projector's writes:

- in the board order (docs/api.md §6): for readers while Redis is unreachable, exports, the
  freeze's copy and the season close's held-match check;
- as the ranking index is built and repaired from them (boards/services.py, boards/rolling.py,
  boards/healing.py), which only consume the rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from leaderboard_project.replicas import read_connection
from scores import encoding, pgarrays
from scores.models import Match
from scores.selectors.config import BoardConfig
from scores.selectors.players import Profile, json_value

# The board order (docs/api.md §6) of a window's values, over `scores_playervalue pv JOIN scores_player p`:
# the one spelling of it (the freeze in seasons/ and the exports below order by it).
ORDER_SQL = 'pv.encoded DESC, p.external_id COLLATE "C"'


def rank_sql(board: BoardConfig) -> str:
    """SQL for the rank as the board displays it, in a statement that declares
    `WINDOW w AS (ORDER BY ORDER_SQL)`: equal values share a rank, or every player has their own."""
    if board.rank_display == "shared":
        return f"RANK() OVER (ORDER BY pv.encoded >> {encoding.TIME_BITS} DESC)"
    return "ROW_NUMBER() OVER w"


@dataclass(frozen=True)
class DurableSlice:
    total: int
    start: int  # 0-based position of rows[0]
    rows: list[tuple[int, int]]  # (player pk, encoded) in the board order (docs/api.md §6)
    better: dict[int, int]  # value part -> players with a strictly better value
    profiles: dict[int, Profile]


def _slice(board: BoardConfig, window: str, start: int, count: int) -> DurableSlice:
    with read_connection().cursor() as cur:
        cur.execute('SELECT count(*) FROM scores_playervalue WHERE board_id = %s AND "window" = %s', [board.id, window])
        total = cur.fetchone()[0]
        cur.execute(
            f"""
            SELECT pv.player_id, pv.encoded, p.external_id, p.display_name, pv.metadata
            FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
            WHERE pv.board_id = %s AND pv."window" = %s ORDER BY {ORDER_SQL} OFFSET %s LIMIT %s
            """,
            [board.id, window, start, count],
        )
        return _slice_of(cur, board, window, total, start, cur.fetchall())


def durable_range(board: BoardConfig, *, window: str, start: int, stop: int) -> DurableSlice:
    return _slice(board, window, start, stop - start + 1)


def durable_after(board: BoardConfig, *, window: str, encoded: int, player: str, count: int) -> DurableSlice:
    """The `count` values after a position (encoded score, player id) in the board order (docs/api.md §6):
    deep paging while Redis is unreachable (boards/cursor.py)."""
    after = '(pv.encoded < %s OR (pv.encoded = %s AND p.external_id COLLATE "C" > %s COLLATE "C"))'
    with read_connection().cursor() as cur:
        cur.execute('SELECT count(*) FROM scores_playervalue WHERE board_id = %s AND "window" = %s', [board.id, window])
        total = cur.fetchone()[0]
        cur.execute(
            "SELECT count(*) FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id "
            f'WHERE pv.board_id = %s AND pv."window" = %s AND NOT {after}',
            [board.id, window, encoded, encoded, player],
        )
        start = cur.fetchone()[0]
        cur.execute(
            f"""
            SELECT pv.player_id, pv.encoded, p.external_id, p.display_name, pv.metadata
            FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
            WHERE pv.board_id = %s AND pv."window" = %s AND {after} ORDER BY {ORDER_SQL} LIMIT %s
            """,
            [board.id, window, encoded, encoded, player, count],
        )
        return _slice_of(cur, board, window, total, start, cur.fetchall())


def _slice_of(cur, board: BoardConfig, window: str, total: int, start: int, fetched: list[tuple]) -> DurableSlice:
    """The slice of the fetched rows (player_id, encoded, external_id, display_name, metadata),
    with how many players are ahead of each score part on the page (shared ranks)."""
    better = {}
    for part in sorted({e >> encoding.TIME_BITS for _, e, *_ in fetched}):
        cur.execute(
            'SELECT count(*) FROM scores_playervalue WHERE board_id = %s AND "window" = %s AND encoded >= %s',
            [board.id, window, (part + 1) << encoding.TIME_BITS],
        )
        better[part] = cur.fetchone()[0]
    return DurableSlice(
        total=total,
        start=start,
        rows=[(pk, e) for pk, e, *_ in fetched],
        better=better,
        profiles={pk: Profile(ext, name, json_value(meta), e) for pk, e, ext, name, meta in fetched},
    )


def durable_position(board: BoardConfig, *, window: str, pk: int) -> int | None:
    """0-based position of a player in the board order (docs/api.md §6), or None if unranked."""
    with read_connection().cursor() as cur:
        cur.execute(
            """
            SELECT count(*) FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id,
                (SELECT pv2.encoded, p2.external_id FROM scores_playervalue pv2 JOIN scores_player p2 ON p2.id = pv2.player_id
                 WHERE pv2.board_id = %s AND pv2."window" = %s AND pv2.player_id = %s) me
            WHERE pv.board_id = %s AND pv."window" = %s
              AND (pv.encoded > me.encoded OR (pv.encoded = me.encoded AND p.external_id COLLATE "C" < me.external_id COLLATE "C"))
            """,
            [board.id, window, pk, board.id, window],
        )
        ahead = cur.fetchone()[0]
        cur.execute(
            'SELECT 1 FROM scores_playervalue WHERE board_id = %s AND "window" = %s AND player_id = %s',
            [board.id, window, pk],
        )
        return ahead if cur.fetchone() else None


def durable_standings(
    board: BoardConfig, *, window: str, pks: list[int]
) -> tuple[dict[int, tuple[int, int, int]], dict[int, Profile]]:
    """{pk: (encoded, 0-based position, players with a strictly better value)} for the
    players among pks who have a value in the window, with their profiles."""
    with read_connection().cursor() as cur:
        cur.execute(
            f"""
            WITH me AS (
                SELECT pv.player_id, pv.encoded, pv.metadata, p.external_id, p.display_name
                FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
                WHERE pv.board_id = %(b)s AND pv."window" = %(w)s AND pv.player_id = ANY(%(pks)s)
            )
            SELECT me.player_id, me.encoded, me.external_id, me.display_name, me.metadata,
                (SELECT count(*) FROM scores_playervalue x
                 WHERE x.board_id = %(b)s AND x."window" = %(w)s AND x.encoded > me.encoded)
                + (SELECT count(*) FROM scores_playervalue x JOIN scores_player px ON px.id = x.player_id
                   WHERE x.board_id = %(b)s AND x."window" = %(w)s AND x.encoded = me.encoded
                     AND px.external_id COLLATE "C" < me.external_id COLLATE "C"),
                (SELECT count(*) FROM scores_playervalue x
                 WHERE x.board_id = %(b)s AND x."window" = %(w)s AND x.encoded >= ((me.encoded >> {encoding.TIME_BITS}) + 1) << {encoding.TIME_BITS})
            FROM me
            """,
            {"b": board.id, "w": window, "pks": pks},
        )
        rows = cur.fetchall()
    standings = {pk: (enc, pos, better) for pk, enc, _, _, _, pos, better in rows}
    found = {pk: Profile(ext, name, json_value(meta), enc) for pk, enc, ext, name, meta, _, _ in rows}
    return standings, found


def _in_order(board: BoardConfig, columns: str) -> str:
    """SELECT (position, rank as displayed, *columns) of every value of one board window
    (parameters: board id, window) in the board order (docs/api.md §6)."""
    return f"""
        SELECT ROW_NUMBER() OVER w, {rank_sql(board)}, {columns}
        FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
        WHERE pv.board_id = %s AND pv."window" = %s
        WINDOW w AS (ORDER BY {ORDER_SQL})
        ORDER BY {ORDER_SQL}
    """


def window_standings_sql(*, board: BoardConfig, window: str) -> tuple[str, list[Any]]:
    """One SELECT of every value of a board window in the board order (docs/api.md §6), as (position, rank as
    displayed, player id, value, reached_at, encoded), and its parameters: for the freeze's
    set-based copy (INSERT ... SELECT in seasons/), which writes rows in the order it reads them."""
    return _in_order(board, "pv.player_id, pv.value, pv.reached_at, pv.encoded"), [board.id, window]


def window_rows(board: BoardConfig, *, window: str, chunk: int = 5000) -> Iterator[tuple]:
    """Every value of a board window in the board order (docs/api.md §6), streamed from a server-side cursor:
    (position, rank as displayed, player id, display name, value, reached_at, encoded)."""
    with read_connection().chunked_cursor() as cur:
        cur.execute(
            _in_order(board, "p.external_id, p.display_name, pv.value, pv.reached_at, pv.encoded"), [board.id, window]
        )
        while rows := cur.fetchmany(chunk):
            yield from rows


def held_touching_top(board: BoardConfig, *, window: str, start: datetime, end: datetime, top: int) -> list[str]:
    """The match ids (sorted, distinct) of held matches that ended in [start, end) whose results
    on this board touch the window's top `top`: a player in it, or a score that would enter it
    (on a total board, added to what the player has)."""
    held = list(
        Match.objects.filter(
            game_id=board.game_id,
            status=Match.Status.HELD,
            ended_at__gte=start,
            ended_at__lt=end,
            results__board_id=board.id,
        )
        .values_list("match_id", "ended_at", "results__player_id", "results__score")
        .order_by("match_id")
    )
    if not held:
        return []
    with connection.cursor() as cur:
        cur.execute(
            'SELECT player_id, encoded, value FROM scores_playervalue WHERE board_id = %s AND "window" = %s '
            "ORDER BY encoded DESC LIMIT %s",
            [board.id, window, top],
        )
        rows = cur.fetchall()
    top_players = {p: v for p, _, v in rows}
    threshold = rows[-1][1] if len(rows) >= top else None
    touching = set()
    for match_id, ended_at, player_id, score in held:
        value = score + top_players.get(player_id, 0) if board.mode == "total" else score
        if threshold is None or player_id in top_players or encoding.encode(board, value, ended_at) >= threshold:
            touching.add(match_id)
    return sorted(touching)


# The reads the ranking index is built and repaired from.

EncodedValue = tuple[int, str, int, int]  # board_id, window, player_id, encoded
CHUNK = 20_000


def values_of(refs: Iterable[tuple[int, str, int]], *, lock: bool = False) -> list[EncodedValue]:
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


def values_updated_since(board_ids: list[int], *, since: datetime) -> list[EncodedValue]:
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
    """`count` players of a board window (all of them if it has fewer) with their encoded values:
    those from a random player id on, wrapping around to the lowest ids. TABLESAMPLE would sample
    the whole table; an index range stays cheap, and the second range runs only if the first
    came up short (a LIMIT over UNION ALL stops reading once it has its rows)."""
    with connection.cursor() as cur:
        cur.execute(
            """
            WITH start AS (
                SELECT floor(random() * (COALESCE(MAX(player_id), 0) + 1))::bigint AS id
                FROM scores_playervalue WHERE board_id = %(b)s AND "window" = %(w)s
            )
            (SELECT player_id, encoded FROM scores_playervalue, start
             WHERE board_id = %(b)s AND "window" = %(w)s AND player_id >= start.id ORDER BY player_id LIMIT %(n)s)
            UNION ALL
            (SELECT player_id, encoded FROM scores_playervalue, start
             WHERE board_id = %(b)s AND "window" = %(w)s AND player_id < start.id ORDER BY player_id LIMIT %(n)s)
            LIMIT %(n)s
            """,
            {"b": board_id, "w": window, "n": count},
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
