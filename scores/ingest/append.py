"""The append statement: one statement stores a submission's new matches and what the request
still has to decide reads back (scores/ingest/submit.py runs it inside the transaction)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection

from scores import encoding, locks, pgarrays
from scores.ingest.matches import MatchIn
from scores.models import ServerKey
from scores.selectors import GameConfig
from scores.sql import fetch_prepared
from scores.windows import result_windows

PREPARED_UP_TO = 20  # results in a submission whose statement runs prepared


class PlayerRace(Exception):
    """A player the statement needed was created by a concurrent request that committed after
    the statement's snapshot: neither inserted nor seen. The store runs again with
    `players_first`, which cannot race (see append())."""


def _windows_of(config: GameConfig, items: list[tuple[int, MatchIn, str]]) -> dict[str, set[tuple[int, str]]]:
    """match_id -> the (board, window)s its results count in; derived once per (instant, board,
    region), which a batch's matches share."""
    derived: dict[tuple[datetime, str, str | None], list[tuple[int, str]]] = {}
    out: dict[str, set[tuple[int, str]]] = {}
    for _, match, _ in items:
        pairs = out[match.match_id] = set()
        for r in match.results:
            key = (match.ended_at, r.board, r.region)
            if key not in derived:
                board = config.boards[r.board]
                derived[key] = [(board.id, w) for w in result_windows(config, board, match.ended_at, r.region)]
            pairs.update(derived[key])
    return out


@dataclass
class _Appended:
    new: dict[str, int]  # match_id -> pk, inserted by this statement
    old: dict[str, tuple[str, str]]  # match_id -> (body_hash, status), stored before it
    players: dict[str, int]  # external id -> pk
    history: dict[tuple[int, str], int]  # (board_id, external player id) -> encoded all-time value
    windows: dict[str, set[tuple[int, str]]]  # match_id -> the (board, window)s it counts in
    cutoffs: set[tuple[int, str]]  # those of them that stopped taking results (frozen)


# A submission's players that are new (names come later, from the projector)
_INSERT_PLAYERS = """INSERT INTO scores_player (game_id, external_id, display_name, created_at)
    SELECT %(game)s, u.external_id, u.display_name, now()
    FROM unnest(%(player_ids)s::text[], %(player_names)s::text[]) AS u(external_id, display_name)
    ORDER BY u.external_id
    ON CONFLICT (game_id, external_id) DO NOTHING"""

# One statement, in this order of effect: the shared ingest lock, then the stamp; players that
# are new; matches that are new; their results; one pending row per projector lane they
# touch. Its one row of arrays answers everything the request
# still has to decide. A result whose player is neither inserted nor visible (created by a
# request that committed after this statement's snapshot) gets a NULL player and fails the
# NOT NULL constraint: see PlayerRace.
_APPEND = f"""
WITH lk AS (SELECT pg_advisory_xact_lock_shared(%(ingest_lock)s, %(game)s::int) AS locked),
stamp AS (SELECT clock_timestamp() AS at FROM lk),
new_players AS (
    {_INSERT_PLAYERS}
    RETURNING external_id, id
),
players AS (
    SELECT external_id, id FROM new_players
    UNION ALL
    SELECT external_id, id FROM scores_player WHERE game_id = %(game)s AND external_id = ANY(%(player_ids)s::text[])
),
new_matches AS (
    INSERT INTO scores_match (game_id, match_id, ended_at, body_hash, status, server_key_id, received_at)
    SELECT %(game)s, u.match_id, u.ended_at, u.body_hash, 'accepted', %(key)s, (SELECT at FROM stamp)
    FROM unnest(%(match_ids)s::text[], %(match_ended_at)s::timestamptz[], %(match_hashes)s::text[])
        WITH ORDINALITY AS u(match_id, ended_at, body_hash, n)
    ORDER BY u.n
    ON CONFLICT (game_id, match_id) DO NOTHING
    RETURNING id, match_id, ended_at
),
new_results AS (
    INSERT INTO scores_result (match_id, player_id, board_id, score, subpart, metadata, display_name, ended_at)
    SELECT m.id, p.id, u.board_id, u.score, u.subpart, u.metadata::jsonb, u.display_name, m.ended_at
    FROM unnest(%(result_matches)s::text[], %(result_players)s::text[], %(result_boards)s::bigint[],
                %(result_scores)s::bigint[], %(result_subparts)s::bigint[], %(result_metadata)s::text[],
                %(result_names)s::text[])
        WITH ORDINALITY AS u(match_id, player, board_id, score, subpart, metadata, display_name, n)
    JOIN new_matches m ON m.match_id = u.match_id
    LEFT JOIN players p ON p.external_id = u.player
    ORDER BY u.n
    RETURNING match_id, player_id, board_id, ended_at
),
queued AS (
    INSERT INTO scores_pending (lane, match_pks, ended_from, ended_to, created_at)
    SELECT mod(player_id, %(lanes)s), array_agg(DISTINCT match_id), min(ended_at), max(ended_at), clock_timestamp()
    FROM new_results GROUP BY 1
    RETURNING lane
),
old AS (
    SELECT x.match_id, x.body_hash, x.status FROM scores_match x
    WHERE x.game_id = %(game)s AND x.match_id = ANY(%(match_ids)s::text[])
),
history AS (
    SELECT r.board_id, p.external_id, pv.encoded
    FROM (SELECT DISTINCT board_id, player_id FROM new_results WHERE board_id = ANY(%(history_boards)s::bigint[])) r
    JOIN scores_playervalue pv ON pv.board_id = r.board_id AND pv."window" = 'all' AND pv.player_id = r.player_id
    JOIN players p ON p.id = r.player_id
),
cuts AS (
    SELECT c.board_id, c."window" FROM unnest(%(cutoff_boards)s::bigint[], %(cutoff_windows)s::text[]) AS u(b, w)
    JOIN scores_windowcutoff c ON c.board_id = u.b AND c."window" = u.w
)
SELECT
    (SELECT array_agg(match_id) FROM new_matches), (SELECT array_agg(id) FROM new_matches),
    (SELECT array_agg(match_id) FROM old), (SELECT array_agg(body_hash) FROM old), (SELECT array_agg(status) FROM old),
    (SELECT array_agg(external_id) FROM players), (SELECT array_agg(id) FROM players),
    (SELECT array_agg(board_id) FROM history), (SELECT array_agg(external_id) FROM history),
    (SELECT array_agg(encoded) FROM history),
    (SELECT array_agg(board_id) FROM cuts), (SELECT array_agg("window") FROM cuts),
    (SELECT count(*) FROM queued)
"""


def append(
    config: GameConfig,
    server_key: ServerKey | None,
    items: list[tuple[int, MatchIn, str]],
    history_boards: set[int],
    *,
    players_first: bool = False,
) -> _Appended:
    """Make a submission's new matches durable in one statement (_APPEND); `players_first`: insert
    its players in a statement of their own before (the retry after a PlayerRace)."""
    boards = config.boards
    names: dict[str, str] = {}
    results = []
    for _, match, _ in items:
        for r in match.results:
            results.append((match.match_id, r))
            if r.display_name:
                names[r.player] = r.display_name
            else:
                names.setdefault(r.player, "")
    players = sorted(names)
    windows = _windows_of(config, items)
    pairs = sorted(set().union(*windows.values()))
    params = {
        "ingest_lock": locks.INGEST,
        "game": config.game.id,
        "key": server_key.id if server_key else None,
        "player_ids": pgarrays.texts(players),
        "player_names": pgarrays.texts(names[p] for p in players),
        "match_ids": pgarrays.texts(m.match_id for _, m, _ in items),
        "match_ended_at": pgarrays.timestamps(m.ended_at for _, m, _ in items),
        "match_hashes": pgarrays.texts(digest for _, _, digest in items),
        "result_matches": pgarrays.texts(match_id for match_id, _ in results),
        "result_players": pgarrays.texts(r.player for _, r in results),
        "result_boards": pgarrays.ints(boards[r.board].id for _, r in results),
        "result_scores": pgarrays.ints(r.score for _, r in results),
        # the sub-scores' digits (scores.encoding.subpart): 0 on boards without sub-scores
        "result_subparts": pgarrays.ints(
            encoding.subpart(boards[r.board], r.subscores) if boards[r.board].subscores else 0 for _, r in results
        ),
        "result_metadata": pgarrays.texts(None if r.metadata is None else json.dumps(r.metadata) for _, r in results),
        "result_names": pgarrays.texts(r.display_name for _, r in results),
        "lanes": locks.LANES,
        "history_boards": pgarrays.ints(sorted(history_boards)),
        "cutoff_boards": pgarrays.ints(b for b, _ in pairs),
        "cutoff_windows": pgarrays.texts(w for _, w in pairs),
    }
    if players_first:
        # Where a concurrent request inserted one of these players and has not committed, this
        # INSERT waits for it; once it returns, every player is this transaction's own or
        # visible to the next statement's snapshot. The shared ingest lock first, as _APPEND
        # takes it: one lock order everywhere (scores/locks.py).
        locks.ingest_lock_shared(config.game.id)
        with connection.cursor() as cur:
            cur.execute(_INSERT_PLAYERS, {k: params[k] for k in ("game", "player_ids", "player_names")})
    try:
        # no savepoint of its own: a failure here fails the whole submission's transaction
        # prepared for a small submission only (scores/sql.py): a batch is planned for its size
        (row,) = fetch_prepared(_APPEND, params, prepare=len(results) <= PREPARED_UP_TO)
    except IntegrityError as exc:
        if "player_id" in str(exc):
            raise PlayerRace from exc
        raise
    (
        new_match_ids,
        new_match_pks,
        old_match_ids,
        old_hashes,
        old_statuses,
        player_ids,
        player_pks,
        history_boards_found,
        history_players,
        history_values,
        cutoff_boards,
        cutoff_windows,
        _,
    ) = (column or [] for column in row)
    return _Appended(
        new=dict(zip(new_match_ids, new_match_pks, strict=True)),
        old={
            match_id: (digest, status)
            for match_id, digest, status in zip(old_match_ids, old_hashes, old_statuses, strict=True)
        },
        players=dict(zip(player_ids, player_pks, strict=True)),
        history={
            (board, player): encoded
            for board, player, encoded in zip(history_boards_found, history_players, history_values, strict=True)
        },
        windows=windows,
        cutoffs=set(zip(cutoff_boards, cutoff_windows, strict=True)),
    )


def matches_existing(game_id: int, match_ids: list[str]) -> dict[str, tuple[str, str]]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT match_id, body_hash, status FROM scores_match WHERE game_id = %s AND match_id = ANY(%s::text[])",
            [game_id, pgarrays.texts(match_ids)],
        )
        return {mid: (digest, status) for mid, digest, status in cur.fetchall()}


def matches_delete(match_pks: list[int]) -> None:
    """Take back matches a rule rejected after the append stored them (their pending rows stay:
    the projector finds nothing of them)."""
    with connection.cursor() as cur:
        cur.execute("DELETE FROM scores_result WHERE match_id = ANY(%s::bigint[])", [pgarrays.ints(match_pks)])
        cur.execute("DELETE FROM scores_match WHERE id = ANY(%s::bigint[])", [pgarrays.ints(match_pks)])


def results_delete(rows: list[tuple[int, int, int]]) -> None:
    """Take back single results (match pk, board id, player pk) a refusal dropped after the append
    stored them (scores/ingest/refusals.py); the match's other results stay."""
    with connection.cursor() as cur:
        cur.execute(
            """
            DELETE FROM scores_result r
            USING unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(match_id, board_id, player_id)
            WHERE r.match_id = u.match_id AND r.board_id = u.board_id AND r.player_id = u.player_id
            """,
            [
                pgarrays.ints(m for m, _, _ in rows),
                pgarrays.ints(b for _, b, _ in rows),
                pgarrays.ints(p for _, _, p in rows),
            ],
        )


def matches_hold(match_pks: list[int]) -> None:
    """Held on arrival: not counted until approved (which stamps counts_from, see Match)."""
    with connection.cursor() as cur:
        cur.execute("UPDATE scores_match SET status = 'held' WHERE id = ANY(%s::bigint[])", [pgarrays.ints(match_pks)])
