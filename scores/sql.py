"""Running the hot statements as prepared statements.

Django binds parameters on the client (psycopg's ClientCursor): every statement reaches
Postgres as new text and is planned afresh. For the ingest statement and the projector's fold,
statements of a dozen CTEs, planning cost more than running them on a small submission (the
fold planned in ~3 ms and ran in less). A server-side-binding cursor on the same connection
lets psycopg prepare them once per connection (prepare=True), and Postgres reuses the plan.

Django turns preparation off for its connections (prepare_threshold None); settings set a
threshold no statement reaches, so only what asks for preparation here is prepared.

The cursor shares the connection, so it runs inside whatever transaction Django has open;
errors are translated to Django's (IntegrityError, OperationalError...), as its own cursors do.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection


@contextmanager
def prepared_cursor() -> Iterator[psycopg.Cursor]:
    """A server-side-binding psycopg cursor on Django's connection: `cur.execute(sql, params,
    prepare=True)` plans `sql` once per connection."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cur:
        yield cur


def fetch_prepared(sql: str, params: Mapping[str, Any] | None = None, *, prepare: bool = True) -> list[tuple]:
    """Run a statement, prepared (or, prepare=False, bound on the server but planned afresh),
    and return all its rows. Logged like Django's own statements when it logs them (DEBUG, or a
    test's CaptureQueriesContext pinning query counts).

    A prepared statement's plan turns generic after five runs (Postgres' plan_cache_mode=auto),
    estimated for arrays of a handful of elements: right for small inputs, ruinous for a
    1000-match batch (the append statement took 5x longer). Callers prepare what is small."""
    started = time.monotonic()
    with prepared_cursor() as cur:
        # off behind a pooler that cannot keep them (settings.DB_PREPARED_STATEMENTS)
        cur.execute(sql, params, prepare=prepare and settings.DB_PREPARED_STATEMENTS)
        rows = cur.fetchall()
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows
