"""Bulk loading of the durable tables with Postgres COPY, for generated data (the demo game,
demo/load.py). The raw SQL on these tables lives here, in their own app; callers hand in rows
already consistent with the ingest path's rules (the demo derives values with its functions).

Every function runs inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connection, transaction


def bulk_lock(lock_id: int) -> None:
    """One loader at a time: a transaction-scoped advisory lock."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", [lock_id])


def fk_checks_skip() -> bool:
    """Skip the per-row foreign-key checks for the rest of this transaction, if allowed.

    For loaders whose every id was just read back from the rows it references, so the checks
    (about a third of the demo's load time) cannot fail. session_replication_role needs a
    superuser, which development databases have; without one the checks simply run."""
    try:
        with transaction.atomic(), connection.cursor() as cur:  # a savepoint: a refusal is harmless
            cur.execute("SET LOCAL session_replication_role = replica")
    except DatabaseError:
        return False
    return True


def _copy(sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
    with connection.cursor() as django_cur, django_cur.cursor.copy(sql) as cp:  # the psycopg 3 cursor
        for row in rows:
            cp.write_row(row)


def players_copy(*, game_id: int, rows: Iterable[tuple[str, str, datetime]]) -> dict[str, int]:
    """(external id, display name, created at) rows; returns every player's pk by external id."""
    _copy(
        "COPY scores_player (game_id, external_id, display_name, created_at) FROM STDIN", ((game_id, *r) for r in rows)
    )
    with connection.cursor() as cur:
        cur.execute("SELECT external_id, id FROM scores_player WHERE game_id = %s", [game_id])
        return dict(cur.fetchall())


def matches_copy(*, game_id: int, rows: Iterable[tuple[str, datetime, str, str, datetime]]) -> dict[str, int]:
    """(match id, ended at, body hash, status, received at) rows, without a server key; returns
    every match's pk by match id."""
    columns = "game_id, match_id, ended_at, body_hash, status, server_key_id, received_at"
    _copy(
        f"COPY scores_match ({columns}) FROM STDIN",
        ((game_id, m, ended, body_hash, status, None, received) for m, ended, body_hash, status, received in rows),
    )
    with connection.cursor() as cur:
        cur.execute("SELECT match_id, id FROM scores_match WHERE game_id = %s", [game_id])
        return dict(cur.fetchall())


def results_copy(*, rows: Iterable[tuple[int, int, int, int, str | None, datetime]]) -> None:
    """(match pk, player pk, board id, score, metadata JSON, the match's ended_at) rows."""
    _copy("COPY scores_result (match_id, player_id, board_id, score, metadata, ended_at) FROM STDIN", rows)


def values_copy(*, rows: Iterable[tuple[Any, ...]]) -> None:
    """(board id, window, player pk, value, reached at, encoded, metadata JSON, updated at,
    latest at) rows; fastest in the unique index's order (appending beats inserting all over
    the indexes)."""
    columns = 'board_id, "window", player_id, value, reached_at, encoded, metadata, updated_at, latest_at'
    _copy(f"COPY scores_playervalue ({columns}) FROM STDIN", rows)


def tables_analyze() -> None:
    """Fresh planner statistics after a bulk load (outside its transaction)."""
    with connection.cursor() as cur:
        cur.execute("ANALYZE scores_player, scores_match, scores_result, scores_playervalue, scores_friendship")


def friendships_copy(*, pairs: Iterable[tuple[int, int]]) -> int:
    """Mutual friendships from (player pk, friend pk) pairs, each pair once: both directions are
    written, as scores.Friendship keeps them. Returns the rows written."""
    count = 0

    def both() -> Iterable[tuple[int, int]]:
        nonlocal count
        for a, b in pairs:
            count += 2
            yield (a, b)
            yield (b, a)

    _copy("COPY scores_friendship (player_id, friend_id) FROM STDIN", both())
    return count
