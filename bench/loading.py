"""The board a benchmark reads: N players and their values COPYed into the bench database
(`scores_player`, `scores_playervalue`), fast enough for 10M players; bench/reads.py builds the
sorted set from them through the real rebuild."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg import sql

from bench import environment
from bench.report import Laps

COPY_CHUNK = 50_000  # rows per COPY write


@dataclass(frozen=True)
class Values:
    """N (value, reached_at unix seconds, encoded) triples; index i belongs to player pk i + 1."""

    values: list[int]
    seconds: list[int]
    encoded: list[int]


Column = Callable[[int], str]  # row index -> the field in COPY text format


def _copy(cur: psycopg.Cursor, table: str, columns: dict[str, Column], rows: int) -> None:
    """COPY `rows` rows into `table`, filling the columns it has among `columns`.

    The schema moves with the code measured (bench/code.py): a column we do not know is left
    to its default, unless it is NOT NULL without one, which is refused by name."""
    cur.execute(
        "SELECT column_name, is_nullable = 'YES' OR column_default IS NOT NULL OR is_identity = 'YES' "
        "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s",
        (table,),
    )
    present = dict(cur.fetchall())
    unknown = sorted(name for name, optional in present.items() if not optional and name not in columns)
    if unknown:
        raise environment.BenchError(
            f"{table} has required columns the bench does not fill: {', '.join(unknown)} (bench/loading.py)"
        )
    names = [name for name in columns if name in present]
    fields = [columns[name] for name in names]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(n) for n in names)
    )
    with cur.copy(statement) as copy:
        for start in range(0, rows, COPY_CHUNK):
            copy.write(
                "".join("\t".join(f(i) for f in fields) + "\n" for i in range(start, min(rows, start + COPY_CHUNK)))
            )


def load_board(pg: psycopg.Connection, game: int, board: environment.BoardInfo, values: Values) -> dict[str, float]:
    """Empty the score tables, COPY players 1..N and their `all` values; return seconds per step."""
    n = len(values.encoded)
    laps = Laps(3)
    steps, step = laps.seconds, laps.mark

    environment.reset_scores(pg)
    step("truncate")
    # Updated a day ago: rows written long before the rebuild, so its catch-up pass replays none.
    updated = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    reached = [datetime.fromtimestamp(s, UTC).isoformat() for s in values.seconds]
    with pg.cursor() as cur:
        player_columns: dict[str, Column] = {
            "id": lambda i: str(i + 1),
            "game_id": lambda i: str(game),
            "external_id": lambda i: f"p{i + 1}",
            "display_name": lambda i: "",
            "created_at": lambda i: updated,
        }
        _copy(cur, "scores_player", player_columns, n)
        cur.execute("SELECT setval(pg_get_serial_sequence('scores_player', 'id'), %s)", (n,))
        step("copy_players")
        value_columns: dict[str, Column] = {
            "board_id": lambda i: str(board.id),
            "window": lambda i: "all",
            "player_id": lambda i: str(i + 1),
            "value": lambda i: str(values.values[i]),
            "reached_at": lambda i: reached[i],
            "encoded": lambda i: str(values.encoded[i]),
            "metadata": lambda i: "\\N",
            "latest_at": lambda i: reached[i],  # a best board's latest counted result is its best
            "updated_at": lambda i: updated,
        }
        _copy(cur, "scores_playervalue", value_columns, n)
        step("copy_values")
        cur.execute("ANALYZE scores_player")
        cur.execute("ANALYZE scores_playervalue")
        step("analyze")
    steps["total"] = round(sum(steps.values()), 3)
    return steps
