"""Folding results into values: which windows a result counts in, how a batch's results merge
per (board, window, player), and the conditional upserts that write them.

- best boards: a value is replaced only by a larger encoded score (`WHERE EXCLUDED.encoded >
  pv.encoded`), so a replay or an out-of-order batch can never lower it;
- total boards: the sum, with the encoded score recomputed in SQL from the new sum, so two
  appliers of one player (which the apply locks prevent anyway) could not lose an addition.

Rows are written in a fixed order (board, window, player), so concurrent batches cannot
deadlock, and a batch is pre-aggregated (a statement cannot update one row twice). Every
changed value goes to the board outbox in the same transaction; after commit `score_accepted`
tells boards/ to mirror the absolute values into Redis.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from scores import encoding, pgarrays
from scores.cutoffs import cutoffs_of
from scores.selectors import BoardConfig, GameConfig
from scores.send import send_on_commit
from scores.signals import score_accepted
from scores.windows import in_region, windows_for

Entry = tuple[int, str, int, int]  # board_id, window, player_id, encoded


@dataclass(frozen=True)
class Counted:
    """One accepted result, as the projector applies it."""

    match_pk: int
    ended_at: datetime
    counts_from: datetime  # when its match began to count (cutoffs.COUNTS_FROM)
    player_id: int
    board: BoardConfig
    score: int
    metadata: dict[str, Any] | None
    region: str | None = None


@dataclass
class _Value:
    """One player's contribution to one board window, pre-aggregated within a batch."""

    value: int
    reached_at: datetime
    encoded: int
    metadata: dict[str, Any] | None
    latest_at: datetime  # ended_at of the latest contribution (the metadata's source)


def result_windows(config: GameConfig, board: BoardConfig, ended_at: datetime, region: str | None) -> list[str]:
    """The global windows of a result, and its region's on a regional board."""
    found = windows_for(ended_at, config.game.reset_timezone, board.windows, config.seasons)
    if board.regions and region is not None:
        tz = config.regions[region].timezone
        found += [in_region(region, w) for w in windows_for(ended_at, tz, board.windows, config.seasons)]
    return found


def values_fold(config: GameConfig, results: Sequence[Counted]) -> list[Entry]:
    """Count results in their players' values; record the changes in the outbox and mirror
    them after commit. A result counts in every window it falls in whose cutoff, if any, came
    after its match began to count. Returns what changed. The caller owns the transaction."""
    if not results:
        return []
    # A batch's results share few end instants: derive each (instant, board, region)'s windows once.
    counted: dict[tuple[datetime, int, str | None], list[str]] = {}
    for r in results:
        key = (r.ended_at, r.board.id, r.region)
        if key not in counted:
            counted[key] = result_windows(config, r.board, r.ended_at, r.region)
    cutoffs = cutoffs_of((board_id, w) for (_, board_id, _), ws in counted.items() for w in ws)
    values: dict[tuple[int, str, int], _Value] = {}
    for r in results:
        board = r.board
        encoded = None if board.mode == "total" else encoding.encode(board, r.score, r.ended_at)
        for window in counted[(r.ended_at, board.id, r.region)]:
            cut = cutoffs.get((board.id, window)) if cutoffs else None
            if cut is not None and r.counts_from >= cut:
                continue  # the window's standings were frozen before this match counted
            _merge(values, board, (board.id, window, r.player_id), r, encoded)
    changed = _values_upsert(config, values)
    if changed:
        outbox_id = outbox_insert(outbox_entries((b, w, p) for b, w, p, _ in changed))
        send_on_commit(score_accepted, sender=None, outbox_id=outbox_id, entries=changed)
    return changed


def _merge(values: dict, board: BoardConfig, key: tuple[int, str, int], r: Counted, encoded: int | None) -> None:
    """Fold one result into the batch's value for a (board, window, player); `encoded` is the
    result's own encoded score on a best board (the same in every window)."""
    current = values.get(key)
    if board.mode == "total":
        if current is None:
            values[key] = _Value(r.score, r.ended_at, 0, r.metadata, r.ended_at)
            return
        current.reached_at = total_reached_at(current.value, current.reached_at, r.score, r.ended_at)
        current.value += r.score
        if r.ended_at >= current.latest_at:
            current.metadata, current.latest_at = r.metadata, r.ended_at
        return
    if current is None or encoded > current.encoded:
        values[key] = _Value(r.score, r.ended_at, encoded, r.metadata, r.ended_at)


def total_reached_at(value_a: int, at_a: datetime, value_b: int, at_b: datetime) -> datetime:
    """When a total made of two parts was reached: the latest part that added something
    (adding 0 does not move a player down); if neither added anything, the earliest."""
    if value_a > 0 and value_b > 0:
        return max(at_a, at_b)
    if value_a > 0:
        return at_a
    if value_b > 0:
        return at_b
    return min(at_a, at_b)


# Both upserts insert a batch's pre-aggregated values in one statement, in a fixed order
# (concurrent writers lock rows in the same order), and differ in how they merge.
_UPSERT_HEAD = """
INSERT INTO scores_playervalue AS pv
    (board_id, "window", player_id, value, reached_at, encoded, metadata, latest_at, updated_at)
SELECT %(board)s, u.w, u.p, u.v, u.r, u.e, u.m::jsonb, u.l, clock_timestamp()
FROM unnest(%(w)s::text[], %(p)s::bigint[], %(v)s::bigint[], %(r)s::timestamptz[], %(e)s::bigint[], %(m)s::text[],
            %(l)s::timestamptz[])
    WITH ORDINALITY AS u(w, p, v, r, e, m, l, n)
ORDER BY u.n
ON CONFLICT (board_id, "window", player_id) DO UPDATE SET
"""

_BEST_UPSERT = (
    _UPSERT_HEAD
    + """
    value = EXCLUDED.value, reached_at = EXCLUDED.reached_at, encoded = EXCLUDED.encoded,
    metadata = EXCLUDED.metadata, latest_at = EXCLUDED.latest_at, updated_at = clock_timestamp()
WHERE EXCLUDED.encoded > pv.encoded
RETURNING pv."window", pv.player_id, pv.encoded
"""
)

# reached_at of a new total, by total_reached_at()'s rule.
_TOTAL_REACHED = """CASE
        WHEN pv.value > 0 AND EXCLUDED.value > 0 THEN GREATEST(pv.reached_at, EXCLUDED.reached_at)
        WHEN pv.value > 0 THEN pv.reached_at
        WHEN EXCLUDED.value > 0 THEN EXCLUDED.reached_at
        ELSE LEAST(pv.reached_at, EXCLUDED.reached_at) END"""

# The encoded score of a total is recomputed in SQL from the summed value.
_TOTAL_ENCODED = encoding.sql_encoded("LEAST(pv.value + EXCLUDED.value, %(cap)s)", _TOTAL_REACHED)
_TOTAL_UPSERT = (
    _UPSERT_HEAD
    + f"""
    value = pv.value + EXCLUDED.value,
    reached_at = {_TOTAL_REACHED},
    encoded = {_TOTAL_ENCODED},
    metadata = CASE WHEN EXCLUDED.latest_at >= pv.latest_at THEN EXCLUDED.metadata ELSE pv.metadata END,
    latest_at = GREATEST(pv.latest_at, EXCLUDED.latest_at),
    updated_at = clock_timestamp()
RETURNING pv."window", pv.player_id, pv.encoded
"""
)


def _values_upsert(config: GameConfig, values: dict[tuple[int, str, int], _Value]) -> list[Entry]:
    """Apply aggregated contributions; return (board_id, window, player_id, encoded) of every
    value that changed."""
    by_board: dict[int, list[tuple[str, int, _Value]]] = {}
    for (board_id, window, player_id), v in sorted(values.items(), key=lambda kv: kv[0]):
        by_board.setdefault(board_id, []).append((window, player_id, v))
    boards = {b.id: b for b in config.boards.values()}
    changed: list[Entry] = []
    with connection.cursor() as cur:
        for board_id, items in by_board.items():
            board = boards[board_id]
            total = board.mode == "total"
            params = {
                "board": board_id,
                "w": pgarrays.texts(w for w, _, _ in items),
                "p": pgarrays.ints(p for _, p, _ in items),
                "v": pgarrays.ints(v.value for _, _, v in items),
                "r": pgarrays.timestamps(v.reached_at for _, _, v in items),
                "e": pgarrays.ints(
                    encoding.encode(board, v.value, v.reached_at) if total else v.encoded for _, _, v in items
                ),
                "m": pgarrays.texts(json.dumps(v.metadata) if v.metadata is not None else None for _, _, v in items),
                "l": pgarrays.timestamps(v.latest_at for _, _, v in items),
            }
            if total:
                params.update(encoding.sql_params(), cap=encoding.value_span(board) - 1)
                cur.execute(_TOTAL_UPSERT, params)
            else:
                cur.execute(_BEST_UPSERT, params)
            changed.extend((board_id, w, p, e) for w, p, e in cur.fetchall())
    return changed


def outbox_insert(entries: list[list], *, rewrite: bool = False) -> int:
    # what BoardOutbox.objects.create() does, without the ORM's per-call work on the hot path
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO scores_boardoutbox (created_at, entries, rewrite) VALUES (clock_timestamp(), %s::jsonb, %s) "
            "RETURNING id",
            [json.dumps(entries, separators=(",", ":")), rewrite],
        )
        return cur.fetchone()[0]


def outbox_entries(refs: Iterable[tuple[int, str, int]]) -> list[list]:
    """The outbox row's entries: player ids grouped per (board, window), see BoardOutbox."""
    grouped: dict[tuple[int, str], list[int]] = defaultdict(list)
    for board_id, window, player_id in refs:
        grouped[(board_id, window)].append(player_id)
    return [[b, w, players] for (b, w), players in grouped.items()]
