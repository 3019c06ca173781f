"""Array parameters as Postgres array literals, one string per column.

Django binds query parameters on the client, and psycopg adapts a Python list element by
element in Python (its ListDumper): on a 1000-result batch that was a fifth of the server's
CPU. The ingest path sends each column as one literal instead, `'{1,2,3}'` cast in SQL
(`%s::bigint[]`), which psycopg quotes in C. The SQL is unchanged otherwise, and the values
reach Postgres exactly as before (tests/scores/test_pgarrays.py round-trips them).

Array literal syntax (PostgreSQL manual, 8.15.6): elements are separated by commas; NULL
(unquoted) is a null; a double-quoted element may hold anything, with `"` and `\\` escaped
by a backslash.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime


def ints(values: Iterable[int | None]) -> str:
    """A bigint[] / int[] literal; None becomes NULL."""
    vals = values if isinstance(values, list) else list(values)
    if None in vals:
        return "{" + ",".join("NULL" if v is None else str(int(v)) for v in vals) + "}"
    return "{" + ",".join(map(str, map(int, vals))) + "}"


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def texts(values: Iterable[str | None]) -> str:
    """A text[] literal; every element is quoted (so "NULL", "" and commas stay text)."""
    vals = values if isinstance(values, list) else list(values)
    if None not in vals:
        # the usual case, done by str methods in C: nothing to escape (ids, windows, hashes)
        joined = "\x00".join(vals)
        if '"' not in joined and "\\" not in joined and joined.count("\x00") == len(vals) - 1:
            return '{"' + joined.replace("\x00", '","') + '"}'
    return "{" + ",".join("NULL" if v is None else _quote(v) for v in vals) + "}"


def timestamps(values: Iterable[datetime | None]) -> str:
    """A timestamptz[] literal of aware datetimes (ISO 8601 with offset: no character that
    needs quoting). A batch shares few distinct instants, so each is formatted once."""
    vals = values if isinstance(values, list) else list(values)
    text: dict[datetime | None, str] = {}
    for v in set(vals):
        if v is None:
            text[v] = "NULL"
        elif v.tzinfo is None:
            raise ValueError("naive datetime: the ingest path only sends aware instants")
        else:
            text[v] = v.isoformat()
    return "{" + ",".join(map(text.__getitem__, vals)) + "}"
