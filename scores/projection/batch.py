"""One projector batch: claim pending matches, apply their results to values, in one transaction.

    BEGIN
      apply locks of the partitions (scores/locks.py)      skip the ones a void holds now
      DELETE FROM scores_pending ... RETURNING             the progress, committed with the values
      read the claimed matches' accepted results           one statement (partition-pruned)
      UPDATE scores_player display names                   only names that changed
      upsert scores_playervalue per board                  values.values_fold
      INSERT scores_boardoutbox                            what changed, for the Redis mirror
    COMMIT
    after commit: score_accepted (boards/ mirrors to Redis, live updates),
                  matches_applied (anticheat/ queues its after-the-fact checks)

The pending rows are deleted in the transaction that writes their values, so `kill -9` at any
point either leaves both (the next batch applies them) or neither (applied once). Between the
commit and the Redis write, the outbox row keeps what Redis still lacks; boards/ replays it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from scores import locks, pgarrays
from scores.projection.values import Counted, values_fold
from scores.selectors import GameConfig, cached_game_config_by_id
from scores.send import send_on_commit
from scores.signals import matches_applied
from scores.windows import claim_seasons

PARTITIONS = locks.PARTITIONS
ALL_PARTITIONS = tuple(range(PARTITIONS))
# How many matches a batch claims at most (whole pending rows; a 1000-match request is one
# row per partition it touches).
MAX_MATCHES = 5000


def partition_of(player_id: int) -> int:
    return player_id % PARTITIONS


@dataclass
class BatchReport:
    rows: int = 0  # pending rows applied
    matches: int = 0
    results: int = 0
    values: int = 0  # values that changed
    oldest: datetime | None = None  # when the oldest applied row was committed: the lag
    partitions: list[int] = field(default_factory=list)


def batch_apply(
    *,
    partitions: Sequence[int] = ALL_PARTITIONS,
    max_matches: int = MAX_MATCHES,
    upto_id: int | None = None,
    wait: bool = False,
) -> BatchReport:
    """Apply one batch of the pending matches of these partitions: its own transaction, or a
    savepoint of the caller's (whose locks then last until the caller commits).

    The projector skips partitions whose apply lock is taken (wait=False); moderation and
    freezes wait for them (wait=True)."""
    report = BatchReport()
    with transaction.atomic():
        if wait:
            locks.apply_lock(partitions)
            locked = sorted(set(partitions))
        else:
            locked = locks.apply_lock_try(partitions)
        if not locked:
            return report
        report.partitions = locked
        claim = _claim(locked, max_matches, upto_id)
        if not claim:
            return report
        report.rows = len(claim)
        report.oldest = min(created for _, _, created in claim)
        rows = _load([pk for pk, _, _ in claim])
        report.results = len(rows)
        by_game: dict[int, list[tuple]] = defaultdict(list)
        for row in rows:
            by_game[row[0]].append(row)
        for game_id, game_rows in by_game.items():
            config = cached_game_config_by_id(game_id)
            if config is None:  # the game was deleted meanwhile: nothing to count
                continue
            report.values += len(_apply_game(config, game_rows))
            match_pks = sorted({row[1] for row in game_rows})
            report.matches += len(match_pks)
            send_on_commit(matches_applied, game_id=game_id, match_pks=match_pks)
    return report


def _claim(partitions: list[int], max_matches: int, upto_id: int | None) -> list[tuple[int, int, datetime]]:
    """(id, matches, created_at) of the oldest pending rows of the partitions, as many whole
    rows as fit max_matches (at least one)."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT id, cardinality(match_pks), created_at FROM scores_pending
            WHERE partition = ANY(%s::int[]) AND (%s::bigint IS NULL OR id <= %s::bigint)
            ORDER BY id LIMIT 1000
            """,
            [pgarrays.ints(partitions), upto_id, upto_id],
        )
        rows = cur.fetchall()
    picked, total = [], 0
    for pk, count, created in rows:
        if picked and total + count > max_matches:
            break
        picked.append((pk, count, created))
        total += count
    return picked


# The claimed rows go in the same statement that reads their results; a result is read by the
# partition its player falls in (a match with players in several partitions is in several rows).
_LOAD = """
WITH claimed AS (
    DELETE FROM scores_pending WHERE id = ANY(%(ids)s::bigint[])
    RETURNING partition, match_pks, ended_from, ended_to
), wanted AS (
    SELECT DISTINCT c.partition, x.pk, c.ended_from, c.ended_to FROM claimed c, unnest(c.match_pks) AS x(pk)
)
SELECT m.game_id, r.match_id, r.ended_at, COALESCE(m.counts_from, m.received_at), r.player_id, r.board_id,
       r.score, r.metadata::text, r.display_name
FROM wanted w
JOIN scores_result r ON r.match_id = w.pk AND r.ended_at >= w.ended_from AND r.ended_at <= w.ended_to
    AND mod(r.player_id, %(parts)s) = w.partition
JOIN scores_match m ON m.id = r.match_id AND m.status = 'accepted'
ORDER BY r.match_id, r.id
"""


def _load(ids: list[int]) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(_LOAD, {"ids": pgarrays.ints(ids), "parts": PARTITIONS})
        return cur.fetchall()


def _apply_game(config: GameConfig, rows: list[tuple]) -> list:
    boards = {b.id: b for b in config.boards.values()}
    regions = _regions_of(config, rows) if config.regions else {}
    results = []
    names: dict[int, str] = {}
    for _, match_pk, ended_at, counts_from, player_id, board_id, score, metadata, display_name in rows:
        board = boards.get(board_id)
        if board is None:  # the board was deleted meanwhile
            continue
        if display_name:
            names[player_id] = display_name  # rows are in match order: the latest name wins
        region = regions.get((player_id, claim_seasons(ended_at, config.seasons)[0])) if regions else None
        results.append(
            Counted(
                match_pk,
                ended_at,
                counts_from,
                player_id,
                board,
                score,
                json.loads(metadata) if metadata is not None else None,
                region,
            )
        )
    if names:
        _names_update(names)
    return values_fold(config, results)


def _names_update(names: dict[int, str]) -> None:
    ids = sorted(names)
    with connection.cursor() as cur:
        cur.execute(
            """
            UPDATE scores_player p SET display_name = u.n
            FROM unnest(%s::bigint[], %s::text[]) AS u(id, n)
            WHERE p.id = u.id AND p.display_name <> u.n
            """,
            [pgarrays.ints(ids), pgarrays.texts(names[i] for i in ids)],
        )


def _regions_of(config: GameConfig, rows: list[tuple]) -> dict[tuple[int, str | None], str]:
    """(player pk, season slug or None) -> region slug, of the batch's players."""
    players = sorted({row[4] for row in rows})
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT pr.player_id, s.slug, r.slug
            FROM scores_playerregion pr
            JOIN scores_region r ON r.id = pr.region_id
            LEFT JOIN scores_season s ON s.id = pr.season_id
            WHERE pr.player_id = ANY(%s::bigint[])
            """,
            [pgarrays.ints(players)],
        )
        return {(player, season): region for player, season, region in cur.fetchall()}


def pending_apply(*, partitions: Sequence[int] = ALL_PARTITIONS, upto_id: int | None = None) -> int:
    """Apply every pending match of these partitions committed so far (up to upto_id), waiting
    for a projector batch that holds one. Inside a transaction, the partitions stay locked until
    it ends: moderation then recomputes knowing nothing of them is half-applied. Returns how
    many matches were applied."""
    if upto_id is None:
        with connection.cursor() as cur:
            cur.execute("SELECT COALESCE(max(id), 0) FROM scores_pending")
            upto_id = cur.fetchone()[0]
    applied = 0
    while True:
        # with nothing to claim this still takes the locks: the caller's recompute must not
        # race a projector batch either
        report = batch_apply(partitions=partitions, upto_id=upto_id, wait=True)
        if not report.rows:
            return applied
        applied += report.matches


def pending_lag() -> tuple[int, datetime | None]:
    """How many pending rows wait, and when the oldest was committed (None: nothing waits)."""
    with connection.cursor() as cur:
        cur.execute("SELECT count(*), min(created_at) FROM scores_pending")
        count, oldest = cur.fetchone()
    return count, oldest
