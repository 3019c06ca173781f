"""Moderation's side of the durable store: recomputing values after a void or a hold, and
counting an approved match (anticheat/services.py calls these; they never decide anything).

Both first take the apply locks of the affected players' projector lanes and apply what
is pending there (scores/projection), inside the caller's transaction: from then until it
commits, no projector batch touches those players, and a recompute reads exactly the results
the values hold, minus what it takes away. A result committed meanwhile (still pending) is left
out of the recompute and added by the projector afterwards, so nothing counts twice.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from django.db import connection

from scores import encoding, events, locks, pgarrays
from scores.cutoffs import COUNTS_FROM, cutoffs_of
from scores.ingest import MatchIn, ResultIn
from scores.locks import LANES, lane_of
from scores.outbox import outbox_entries, outbox_insert
from scores.projection import pending_apply
from scores.projection.values import clamped_totals_sql
from scores.selectors import GameConfig, player_external_ids
from scores.send import send_on_commit
from scores.signals import values_rewritten
from scores.windows import bounds, claim_seasons, result_windows

Ref = tuple[int, str, int]  # board_id, window, player_id


class _StoredMatch(NamedTuple):
    """A match read back row by row: each row adds a result and its player's pk."""

    match_id: str
    ended_at: datetime
    results: list[ResultIn]
    player_pks: dict[str, int]  # external id -> pk


def stored_matches_load(config: GameConfig, *, match_pks: Sequence[int]) -> list[tuple[int, MatchIn, dict[str, int]]]:
    """Stored matches as ingest saw them: (pk, match, {player external id: pk}); each result's
    region is the one its player held for the season (fixed per season, so the same)."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT m.id, m.match_id, m.ended_at, p.id, p.external_id, b.slug, r.score, r.metadata::text, r.subpart
            FROM scores_match m
            JOIN scores_result r ON r.match_id = m.id AND r.ended_at = m.ended_at
            JOIN scores_player p ON p.id = r.player_id
            JOIN scores_board b ON b.id = r.board_id
            WHERE m.id = ANY(%s) ORDER BY m.id, r.id
            """,
            [list(match_pks)],
        )
        rows = cur.fetchall()
    grouped: dict[int, _StoredMatch] = {}
    for pk, match_id, ended_at, player_pk, player, board, score, metadata, subpart in rows:
        entry = grouped.setdefault(pk, _StoredMatch(match_id, ended_at, [], {}))
        shape = config.boards[board]
        subs = encoding.decode_subpart(shape, subpart) if shape.subscores else None
        entry.results.append(
            ResultIn(player, board, score, metadata=json.loads(metadata) if metadata else None, subscores=subs)
        )
        entry.player_pks[player] = player_pk
    regions = _regions(config, {pk for entry in grouped.values() for pk in entry.player_pks.values()})
    out = []
    for pk, (match_id, ended_at, results, ids) in grouped.items():
        season = claim_seasons(ended_at, config.seasons)[0]
        results = [
            r if not regions else dataclasses.replace(r, region=regions.get((ids[r.player], season))) for r in results
        ]
        out.append((pk, MatchIn(match_id, ended_at, tuple(results)), ids))
    return out


def _regions(config: GameConfig, player_pks: set[int]) -> dict[tuple[int, str | None], str]:
    if not config.regions or not player_pks:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT pr.player_id, s.slug, r.slug FROM scores_playerregion pr
            JOIN scores_region r ON r.id = pr.region_id LEFT JOIN scores_season s ON s.id = pr.season_id
            WHERE pr.player_id = ANY(%s::bigint[])
            """,
            [pgarrays.ints(sorted(player_pks))],
        )
        return {(p, s): r for p, s, r in cur.fetchall()}


def matches_refs(config: GameConfig, *, match_pks: Sequence[int]) -> set[Ref]:
    """Every (board, window, player) value these matches counted in (or would have)."""
    refs: set[Ref] = set()
    for _, match, players in stored_matches_load(config, match_pks=match_pks):
        for r in match.results:
            board = config.boards[r.board]
            refs.update(
                (board.id, w, players[r.player]) for w in result_windows(config, board, match.ended_at, r.region)
            )
    return refs


def frozen_of(refs: set[Ref]) -> set[tuple[int, str]]:
    """The (board, window)s among refs that stopped taking results (their standings are frozen)."""
    return set(cutoffs_of({(b, w) for b, w, _ in refs}))


def matches_status_set(
    match_pks: Sequence[int],
    *,
    to: str,
    allowed: Sequence[str],
    decided_by: str | None = None,
    undecided_only: bool = False,
) -> list[tuple[int, str]]:
    """Move matches to `to` from one of `allowed`, in one conditional statement (rows locked in
    id order); return (pk, previous status) of those that moved.

    `decided_by`: a person decides (approve, void): the match is stamped decided_at/decided_by.
    `undecided_only`: an automatic move (a hold by the checks) leaves every match a person
    decided as it is, whatever its status; the condition is in the statement, so a decision
    committed while the check ran wins (the locked row is re-read before it is updated)."""
    decided = decided_by is not None
    with connection.cursor() as cur:
        cur.execute(
            """
            UPDATE scores_match m SET status = %s,
                decided_at = CASE WHEN %s THEN clock_timestamp() ELSE m.decided_at END,
                decided_by = CASE WHEN %s THEN %s ELSE m.decided_by END
            FROM (SELECT id, status FROM scores_match WHERE id = ANY(%s) AND status = ANY(%s)
                  AND (NOT %s OR decided_at IS NULL)
                  ORDER BY id FOR UPDATE) old
            WHERE m.id = old.id
            RETURNING m.id, old.status
            """,
            [to, decided, decided, (decided_by or "")[:150], sorted(match_pks), list(allowed), undecided_only],
        )
        return cur.fetchall()


def matches_counted_since_arrival(match_pks: Sequence[int]) -> None:
    """Record that these matches, held now after counting, began to count on arrival: their
    approval later must not move that moment (see Match.counts_from)."""
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE scores_match SET counts_from = received_at WHERE id = ANY(%s::bigint[]) AND counts_from IS NULL",
            [pgarrays.ints(match_pks)],
        )


def matches_count(config: GameConfig, *, match_pks: Sequence[int]) -> int:
    """Count matches a moderator approved (the caller set them accepted) exactly as ingest
    would have counted them on arrival, except in windows frozen meanwhile: a match held on
    arrival begins to count now (counts_from; one held after the fact keeps its arrival).
    Applied before the caller commits."""
    if not match_pks:
        return 0
    locks.ingest_lock_shared(config.game.id)  # the stamp must fall on one side of any cutoff
    with connection.cursor() as cur:
        cur.execute(
            """
            UPDATE scores_match SET counts_from = clock_timestamp()
            WHERE id = ANY(%s::bigint[]) AND counts_from IS NULL
            """,
            [pgarrays.ints(match_pks)],
        )
        cur.execute(
            """
            INSERT INTO scores_pending (lane, match_pks, ended_from, ended_to, created_at)
            SELECT mod(r.player_id, %s), array_agg(DISTINCT r.match_id), min(r.ended_at), max(r.ended_at), clock_timestamp()
            FROM scores_match m JOIN scores_result r ON r.match_id = m.id AND r.ended_at = m.ended_at
            WHERE m.id = ANY(%s::bigint[])
            GROUP BY 1
            RETURNING lane
            """,
            [LANES, pgarrays.ints(match_pks)],
        )
        lanes = [lane for (lane,) in cur.fetchall()]
    return pending_apply(lanes=lanes)


_LOCK_VALUES = """
SELECT pv."window", pv.player_id, pv.value FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS u(w, p, n)
JOIN scores_playervalue pv ON pv.board_id = %s AND pv."window" = u.w AND pv.player_id = u.p
ORDER BY u.n FOR UPDATE OF pv
"""

# Candidates of one value: the player's accepted results on the board inside the window's
# bounds (NULL: unbounded) whose match began to count before the window's cutoff (NULL: none),
# minus results still pending for the projector (committed after this moderation drained their
# lane: the projector adds them later). Reads go through the (player, board) index.
_CANDIDATES = f"""
FROM unnest(%(windows)s::text[], %(players)s::bigint[], %(starts)s::timestamptz[], %(ends)s::timestamptz[],
            %(cutoffs)s::timestamptz[])
    WITH ORDINALITY AS u(w, player_id, starts, ends, cut_at, n)
JOIN scores_result r ON r.player_id = u.player_id AND r.board_id = %(board)s
    AND (u.starts IS NULL OR r.ended_at >= u.starts) AND (u.ends IS NULL OR r.ended_at < u.ends)
JOIN scores_match m ON m.id = r.match_id AND m.status = 'accepted'
    AND (u.cut_at IS NULL OR {COUNTS_FROM} < u.cut_at)
WHERE NOT EXISTS (
    SELECT 1 FROM scores_pending q
    WHERE q.lane = mod(r.player_id, %(lanes)s) AND r.match_id = ANY(q.match_pks)
)
"""

_BEST_RECOMPUTE = (
    "SELECT DISTINCT ON (u.n) u.w, u.player_id, r.score, r.ended_at, r.metadata::text, r.ended_at, "
    + encoding.sql_encoded("%(part)s", "r.ended_at")
    + " AS enc\n"
    + _CANDIDATES
    + "ORDER BY u.n, enc DESC, r.ended_at, m.id"  # the projector's choice among equal values
)

# Latest boards: the most recent remaining result, ordered as the projector orders them
# (ended_at, then match_id bytes, then the last of a match's results).
_LATEST_RECOMPUTE = (
    "SELECT DISTINCT ON (u.n) u.w, u.player_id, r.score, r.ended_at, r.metadata::text, r.ended_at, "
    + encoding.sql_encoded("%(part)s", "r.ended_at")
    + " AS enc, m.match_id\n"
    + _CANDIDATES
    + 'ORDER BY u.n, r.ended_at DESC, m.match_id COLLATE "C" DESC, r.id DESC'
)

# Totals that may fall: clamped at the floor in the order the remaining results happened, as
# the projector clamps them (scores.projection.values.clamped_totals_sql).
_SIGNED_RECOMPUTE = (
    'WITH parts AS (SELECT %(board)s::bigint AS board_id, u.w AS "window", u.player_id, r.score, r.ended_at, '
    "r.metadata, m.match_id AS match_ext, r.id AS result_id, NULL::bigint AS x0, "
    "NULL::timestamptz AS stored_reached, %(floor)s::bigint AS floor\n"
    + _CANDIDATES
    + ') SELECT t."window", t.player_id, t.value, t.reached_at, t.metadata::text, t.latest_at, t.latest_match FROM ('
    + clamped_totals_sql("parts")
    + ") AS t"
)

# reached_at by scores.projection.values.total_reached_at()'s rule folded over every part: the latest
# part that added something, else the earliest; metadata of the latest part (ties: last stored).
_TOTAL_RECOMPUTE = (
    """
SELECT u.w, u.player_id, SUM(r.score)::bigint, COALESCE(MAX(r.ended_at) FILTER (WHERE r.score > 0), MIN(r.ended_at)),
    (array_agg(r.metadata::text ORDER BY r.ended_at DESC, m.id DESC))[1], MAX(r.ended_at)
"""
    + _CANDIDATES
    + "GROUP BY u.n, u.w, u.player_id ORDER BY u.n"
)


class _Recomputed(NamedTuple):
    """One value as the recompute's SELECTs return it (in this column order)."""

    window: str
    player_id: int
    value: int
    reached_at: datetime
    metadata: str | None  # JSON text
    latest_at: datetime
    encoded: int
    latest_match: str | None = None  # latest boards: the match of the latest result


def values_recompute(config: GameConfig, *, refs: set[Ref], reason: str) -> list[Ref]:
    """Recompute values from the players' remaining accepted matches (after a void or a hold),
    in SQL: best = the largest encoded result in the window, total = the sum, latest = the most
    recent result (a void restores the one before). Rows with nothing
    left are deleted. The caller owns the transaction and has set the matches' status.

    After commit, boards/ rewrites these entries with absolute writes (they may go down); an
    outbox row makes the periodic drain rewrite them once more."""
    if not refs:
        return []
    pending_apply(lanes={lane_of(p) for _, _, p in refs})
    by_board: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for board_id, window, player_id in sorted(refs):
        by_board[board_id].append((window, player_id))
    boards = {b.id: b for b in config.boards.values()}
    cutoffs = cutoffs_of({(b, w) for b, w, _ in refs})
    touched: list[Ref] = []
    changes: list[tuple[str, str, int, int | None, int | None]] = []  # board, window, player pk, before, after
    with connection.cursor() as cur:
        for board_id, items in by_board.items():
            board = boards[board_id]
            cur.execute(_LOCK_VALUES, [[w for w, _ in items], [p for _, p in items], board_id])
            before = {(w, p): v for w, p, v in cur.fetchall()}
            spans = [bounds(w, config.timezone_of(w), config.seasons) or (None, None) for w, _ in items]
            params = {
                "board": board_id,
                "windows": [w for w, _ in items],
                "players": [p for _, p in items],
                "starts": [start for start, _ in spans],
                "ends": [end for _, end in spans],
                "cutoffs": [cutoffs.get((board_id, w)) for w, _ in items],
                "lanes": LANES,
                **encoding.sql_params(board),
            }
            if encoding.may_fall(board) and board.mode == "total":
                cur.execute(_SIGNED_RECOMPUTE, {**params, "floor": encoding.min_total(board)})
                found = [
                    _Recomputed(w, p, v, reached, meta, latest, encoding.encode(board, v, reached), match)
                    for w, p, v, reached, meta, latest, match in cur.fetchall()
                ]
            elif board.mode == "total":
                cur.execute(_TOTAL_RECOMPUTE, params)
                found = [
                    _Recomputed(w, p, v, reached, meta, latest, encoding.encode(board, v, reached))
                    for w, p, v, reached, meta, latest in cur.fetchall()
                ]
            else:
                sql = _LATEST_RECOMPUTE if board.mode == "latest" else _BEST_RECOMPUTE
                cur.execute(sql.replace("%(part)s", encoding.sql_value_part(board, "r.score", "r.subpart")), params)
                found = [_Recomputed(*row) for row in cur.fetchall()]
            # update the rows that exist (a value never appears here that the projector did not count)
            cur.execute(
                """
                UPDATE scores_playervalue pv SET value = u.v, reached_at = u.r, encoded = u.e, metadata = u.m::jsonb,
                    latest_at = u.l, latest_match = u.lm, updated_at = clock_timestamp()
                FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::timestamptz[], %s::bigint[], %s::text[],
                            %s::timestamptz[], %s::text[]) AS u(w, p, v, r, e, m, l, lm)
                WHERE pv.board_id = %s AND pv."window" = u.w AND pv.player_id = u.p
                """,
                [
                    [f.window for f in found],
                    [f.player_id for f in found],
                    [f.value for f in found],
                    [f.reached_at for f in found],
                    [f.encoded for f in found],
                    [f.metadata for f in found],
                    [f.latest_at for f in found],
                    [f.latest_match for f in found],
                    board_id,
                ],
            )
            remaining = {(f.window, f.player_id) for f in found}
            gone = [(w, p) for w, p in items if (w, p) not in remaining]
            if gone:
                cur.execute(
                    """
                    DELETE FROM scores_playervalue pv USING unnest(%s::text[], %s::bigint[]) AS u(w, p)
                    WHERE pv.board_id = %s AND pv."window" = u.w AND pv.player_id = u.p
                    """,
                    [[w for w, _ in gone], [p for _, p in gone], board_id],
                )
            touched.extend((board_id, w, p) for w, p in items)
            after = {(f.window, f.player_id): f.value for f in found}
            changes.extend(
                (board.slug, w, p, before.get((w, p)), after.get((w, p)))
                for w, p in items
                if before.get((w, p)) != after.get((w, p))
            )
    _events_draft(config, changes)
    if touched:
        outbox_id = outbox_insert(outbox_entries(touched), rewrite=True)
        send_on_commit(values_rewritten, outbox_id=outbox_id, refs=touched, reason=reason)
    return touched


def _events_draft(config: GameConfig, changes: list[tuple[str, str, int, int | None, int | None]]) -> None:
    """value.changed for each value the recompute moved (scores/events.py)."""
    if not changes:
        return
    external = player_external_ids(p for _, _, p, _, _ in changes)
    at = events.event_at()
    events.events_draft(
        game_id=config.game.id,
        events=[
            events.value_changed(player=external[p], board=board, window=w, before=b, after=a, at=at)
            for board, w, p, b, a in changes
        ],
    )
