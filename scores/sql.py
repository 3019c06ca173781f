"""Running the hot statements as prepared statements.

Django binds parameters on the client (psycopg's ClientCursor): every statement reaches
Postgres as new text and is planned afresh. For the ingest statement and the projector's fold,
statements of a dozen CTEs, planning cost more than running them on a small submission (the
fold planned in ~3 ms and ran in less). A server-side-binding cursor on the same connection
lets psycopg prepare them once per connection (prepare=True), and Postgres reuses the plan.

The cursor shares the connection, so it runs inside whatever transaction Django has open;
errors are translated to Django's (IntegrityError, OperationalError...), as its own cursors do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connection


@contextmanager
def prepared_cursor() -> Iterator[psycopg.Cursor]:
    """A server-side-binding psycopg cursor on Django's connection: `cur.execute(sql, params,
    prepare=True)` plans `sql` once per connection."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cur:
        yield cur


def fetch_prepared(sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
    """Run a prepared statement, return all its rows. Logged like Django's own statements when
    it logs them (DEBUG, or a test's CaptureQueriesContext pinning query counts)."""
    started = time.monotonic()
    with prepared_cursor() as cur:
        cur.execute(sql, params, prepare=True)
        rows = cur.fetchall()
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows
