"""Writes to the sorted sets: mirroring committed values, healing after outages, rebuilding.

Every write carries the absolute encoded value from Postgres and uses ZADD GT, so a retry,
a replay or an out-of-order delivery can never lower or double a score; on boards whose values
may fall, the value is read again under a row lock and written absolutely (values_write)."""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from boards import index
from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis, log_unavailable
from scores.models import Board, BoardOutbox
from scores.outbox import outbox_refs
from scores.selectors import EncodedValue, board_values_stream, values_of, values_updated_since, window_expiry
from scores.windows import ROLLING_WINDOWS

log = logging.getLogger(__name__)

REBUILD_CHUNK = 20000
BUILD_KEY_TTL = 3600  # an interrupted rebuild's scratch keys clean themselves up


def _writes(pipe: Any, by_key: dict[str, dict[str, int]], *, gt: bool, removed: Iterable[tuple[str, str]] = ()) -> None:
    """Queue ZADDs (and ZREMs) with their windows' expiries and, on sharded boards, the
    write counters the estimated ranks' error bound reads (keys.changes_key)."""
    touched: dict[str, int] = defaultdict(int)
    for key, mapping in by_key.items():
        pipe.zadd(key, mapping, gt=gt)
        touched[key] += len(mapping)
    for key, member in removed:
        pipe.zrem(key, member)
        touched[key] += 1
    for key, n in touched.items():
        parsed = keys.parse_board_key(key)
        expiry = window_expiry(parsed[0], window=parsed[2])
        if parsed[1] is not None:
            pipe.incrby(keys.changes_key(key), n)
        if expiry is not None:
            # closed windows go away on their own; the durable store keeps them
            pipe.expireat(key, expiry)
            if parsed[1] is not None:
                pipe.expireat(keys.changes_key(key), expiry)


def _by_key(values: Iterable[EncodedValue]) -> dict[str, dict[str, int]]:
    by_key: dict[str, dict[str, int]] = defaultdict(dict)
    shards: dict[int, int] = {}
    # One projector batch brings thousands of values over a handful of (board, window) sets:
    # each unsharded set's mapping is looked up once rather than its key built again per value
    # (docs/BENCHMARKS.md, "Round three: the projector").
    mappings: dict[tuple[int, str], dict[str, int]] = {}
    for board_id, window, player_id, encoded in values:
        mapping = mappings.get((board_id, window))
        if mapping is None:
            if board_id not in shards:
                shards[board_id] = index.shards_of(board_id)
            if shards[board_id] > 1:
                mapping = by_key[keys.player_key(board_id, window, shards[board_id], player_id)]
            else:
                mapping = mappings[(board_id, window)] = by_key[keys.board_key(board_id, window)]
        member = str(player_id)
        old = mapping.get(member)
        mapping[member] = encoded if old is None or encoded > old else old
    return by_key


def values_write(values: Iterable[EncodedValue], *, outbox_id: int | None = None) -> None:
    """Mirror absolute values into the sorted sets (each player's shard of each window) in
    one MULTI on one Redis, one pipeline per node on a cluster (raises if Redis is down).

    Boards whose values only rise take ZADD GT, so a late or repeated write never lowers one.
    Boards whose values may fall (latest; totals that subtract: scores.encoding.may_fall)
    cannot: their values are read again from Postgres FOR SHARE and written absolutely before
    the locks go, as moderation's rewrite does, so the writes reach Redis in the order their
    values were committed and a stale one never lands after a newer one.

    With outbox_id, that outbox row is recorded as applied, so the periodic drain deletes it
    without replaying it: in the same MULTI on one Redis; on a cluster after every node took
    its writes (REDIS_URL keeps the outbox's bookkeeping), so a failure before leaves the row
    to be replayed."""
    values = list(values)
    falls: dict[int, bool] = {}
    for board_id, _, _, _ in values:
        if board_id not in falls:
            falls[board_id] = index.may_fall(board_id)
    if not any(falls.values()):
        _values_write(values, outbox_id=outbox_id, absolute=())
        return
    with transaction.atomic():
        _values_write(
            [v for v in values if not falls[v[0]]],
            outbox_id=outbox_id,
            absolute=[(b, w, p) for b, w, p, _ in values if falls[b]],
        )


def _values_write(
    values: list[EncodedValue], *, outbox_id: int | None, absolute: Iterable[tuple[int, str, int]]
) -> None:
    by_key = _by_key(values)
    pipe = index.pipeline(transaction=True)
    queued = _absolute_queue(pipe, absolute)
    if not by_key and not queued and outbox_id is None:
        return
    cluster = index.is_cluster()
    _writes(pipe, by_key, gt=True)
    if outbox_id is not None and not cluster:
        pipe.sadd(keys.OUTBOX_APPLIED, outbox_id)
    if by_key or queued or not cluster:
        pipe.execute()
    if outbox_id is not None and cluster:
        get_redis().sadd(keys.OUTBOX_APPLIED, outbox_id)


def _absolute_queue(pipe: Any, refs: Iterable[tuple[int, str, int]]) -> int:
    """Queue plain ZADDs of the values Postgres holds now for refs (read FOR SHARE in the
    caller's transaction), ZREMs where none is left; returns how many refs."""
    refs = sorted(set(map(tuple, refs)))
    if not refs:
        return 0
    current = {(b, w, p): e for b, w, p, e in values_of(refs, lock=True)}
    by_key: dict[str, dict[str, int]] = defaultdict(dict)
    removed = []
    for ref in refs:
        key = keys.player_key(ref[0], ref[1], index.shards_of(ref[0]), ref[2])
        if ref in current:
            by_key[key][str(ref[2])] = current[ref]
        else:
            removed.append((key, str(ref[2])))
    _writes(pipe, by_key, gt=False, removed=removed)
    return len(refs)


def outbox_entry_apply(*, outbox_id: int, values: list[EncodedValue]) -> bool:
    """The post-commit fast path: one Redis round trip, no second database transaction.
    With Redis down the outbox row stays unapplied and outbox_drain() replays it."""
    try:
        values_write(values, outbox_id=outbox_id)
    except REDIS_DOWN as exc:
        log_unavailable(log, "Redis unavailable, %d values wait in outbox row %d: %s", len(values), outbox_id, exc=exc)
        return False
    return True


def values_rewrite(refs: Iterable[tuple[int, str, int]]) -> int:
    """Moderation's path (void, hold): write the values Postgres holds now *absolutely* (plain
    ZADD, ZREM where the value is gone), so entries can go down or away.

    The rows are read FOR SHARE and the Redis writes run before the transaction ends: an
    ingest upsert of the same rows waits until the rewrite is in Redis, so its own ZADD GT
    lands after it and is never undone. Raises if Redis is down (the outbox row stays for the
    drain)."""
    refs = sorted(set(map(tuple, refs)))
    if not refs:
        return 0
    with transaction.atomic():
        pipe = index.pipeline(transaction=True)
        _absolute_queue(pipe, refs)
        pipe.execute()
    return len(refs)


def outbox_drain(*, grace_seconds: float | None = None, batch: int = 2000) -> int:
    """Clear outbox rows older than the grace period: rows the fast path applied are just
    deleted; the others are replayed from the values Postgres holds now (ZADD GT). Moderation
    rows (rewrite) are always replayed, absolutely: a second rewrite a moment after the first
    undoes an ingest fast path's ZADD GT of a voided value that reached Redis late.

    Returns how many rows were replayed. Raises if Redis is still down (rows stay)."""
    grace = settings.BOARD_SYNC_GRACE_SECONDS if grace_seconds is None else grace_seconds
    cutoff = timezone.now() - timedelta(seconds=grace)
    r = get_redis()
    replayed = 0
    while True:
        with transaction.atomic():
            rows = list(
                BoardOutbox.objects.select_for_update(skip_locked=True)
                .filter(created_at__lte=cutoff)
                .order_by("id")[:batch]
            )
            if not rows:
                return replayed
            ids = [row.id for row in rows]
            applied = r.smismember(keys.OUTBOX_APPLIED, ids)
            missed = [row for row, done in zip(rows, applied, strict=True) if not done or row.rewrite]
            rewrites = {ref for row in missed if row.rewrite for ref in outbox_refs(row.entries)}
            refs = {ref for row in missed if not row.rewrite for ref in outbox_refs(row.entries)} - rewrites
            values_write(values_of(refs))
            values_rewrite(rewrites)
            BoardOutbox.objects.filter(id__in=ids).delete()
        r.srem(keys.OUTBOX_APPLIED, *ids)
        replayed += len(missed)


@dataclass
class RebuildReport:
    boards: int = 0
    windows: int = 0
    entries: int = 0
    caught_up: int = 0  # values written while the rebuild ran, replayed after the swap
    seconds: float = 0.0


def boards_rebuild(
    *, boards: Iterable[Board] | None = None, progress: Callable[[int], None] | None = None
) -> RebuildReport:
    """Rebuild sorted sets from Postgres into scratch keys, then swap them in atomically.

    Readers see the old or the new board, never a half-built one (on a cluster, each shard
    swaps atomically; shards on different nodes swap a moment apart). Values committed while
    the rebuild streamed are replayed after the swap (ZADD GT), so none is lost. The board's
    current `shards` decides the layout: re-sharding is this rebuild."""
    started = timezone.now()
    boards = list(Board.objects.all() if boards is None else boards)
    # every board rebuilt (named one by one or not): the index is complete, readers may trust it
    full = {b.id for b in boards} >= set(Board.objects.values_list("id", flat=True))
    report = RebuildReport(boards=len(boards))
    token = secrets.token_hex(4)
    for board in boards:
        built = _board_stream(token, board, progress)
        report.entries += sum(built.values())
        report.windows += len({keys.window_of(k) for k in built})
        _board_swap(token, board, built)
    report.caught_up = _catch_up(started, [b.id for b in boards])
    if full:
        index.mark_built(started.isoformat())
    report.seconds = (timezone.now() - started).total_seconds()
    return report


def _board_stream(token: str, board: Board, progress: Callable[[int], None] | None) -> dict[str, int]:
    """Stream a board's values into scratch keys; returns live key -> members built."""
    counts: dict[str, int] = defaultdict(int)
    shards = board.shards
    now = time.time()
    # live key and scratch key of each (window, shard); None: the window is past its retention
    # (Postgres keeps it, Redis need not)
    targets: dict[tuple[str, int], tuple[str, str] | None] = {}

    def target(window: str, shard: int) -> tuple[str, str] | None:
        if (window, shard) not in targets:
            expiry = window_expiry(board.id, window=window)
            live = keys.board_key(board.id, window, shard if shards > 1 else None)
            targets[window, shard] = (
                None if expiry is not None and expiry <= now else (live, _build_key_of(token, live))
            )
        return targets[window, shard]

    # Redis ingests one chunk while Python reads and shapes the next: the two ran one after the
    # other before, and Redis' ZADD work alone is about half of a rebuild (the suite's rebuild figures). Each
    # chunk becomes one ZADD per sorted set with its arguments laid out flat as they go on the
    # wire (score, member, ...): a per-row dict and redis-py's own pairing loop cost more than
    # reading the rows.
    with _PipelineWriter() as writer:
        for rows in board_values_stream(board.id, chunk=REBUILD_CHUNK):
            flat: dict[tuple[str, int], list[Any]] = defaultdict(list)
            if shards > 1:
                for window, member, encoded in rows:
                    args = flat[window, keys.shard_of_member(member, shards)]
                    args += (encoded, member)
            else:
                last, args = None, []
                for window, member, encoded in rows:
                    if window != last:
                        last, args = window, flat[window, 0]
                    args += (encoded, member)
            pipe = index.pipeline(transaction=False)
            for (window, shard), args in flat.items():
                found = target(window, shard)
                if found is None:
                    continue
                live, scratch = found
                index.zadd_flat(pipe, scratch, args)
                pipe.expire(scratch, BUILD_KEY_TTL)
                counts[live] += len(args) // 2
            writer.send(pipe)
            if progress:
                progress(len(rows))
    return counts


def _build_key_of(token: str, live: str) -> str:
    board_id, shard, window = keys.parse_board_key(live)
    return keys.build_key(token, board_id, window, shard)


class _PipelineWriter:
    """Executes pipelines on a background thread, in order, at most two waiting; an error there
    is raised in the caller at the next send() or on leaving the block."""

    def __init__(self) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="rebuild-writer", daemon=True)

    def __enter__(self) -> _PipelineWriter:
        self._thread.start()
        return self

    def _run(self) -> None:
        while (pipe := self._queue.get()) is not None:
            if self._error is None:
                try:
                    pipe.execute()
                except BaseException as exc:  # handed to the caller's thread
                    self._error = exc

    def send(self, pipe) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(pipe)

    def __exit__(self, *exc_info: object) -> None:
        self._queue.put(None)
        self._thread.join()
        if self._error is not None and exc_info[0] is None:
            raise self._error


def board_keys_live(board_id: int) -> set[str]:
    """Every sorted set of a board in the index now (every node of a cluster)."""
    r = index.index()
    found: set[str] = set()
    for pattern in keys.board_patterns(board_id):
        found |= {k.decode() if isinstance(k, bytes) else k for k in r.scan_iter(match=pattern, count=1000)}
    return found


def _board_swap(token: str, board: Board, built: dict[str, int]) -> None:
    live = board_keys_live(board.id)
    layout = set(keys.shard_keys(board.id, "x", board.shards))
    pipe = index.pipeline(transaction=True)
    for target in built:
        pipe.rename(_build_key_of(token, target), target)
        pipe.persist(target)
        if board.shards > 1:  # the set changed whole: every estimate older than now is off
            pipe.incrby(keys.changes_key(target), built[target])
        live.discard(target)
    for stale in live:  # windows with no values left in Postgres, or of another shard layout
        board_id, shard, window = keys.parse_board_key(stale)
        kept_layout = keys.board_key(board_id, "x", shard) in layout
        if window not in ROLLING_WINDOWS or not kept_layout:  # rolling windows are built by boards/rolling.py
            pipe.delete(stale)
    pipe.execute()


CATCH_UP_MARGIN = timedelta(seconds=30)


def _catch_up(since, board_ids: list[int]) -> int:
    # updated_at is stamped when the upsert ran, a moment before its commit; the margin
    # covers that gap (ingest transactions last milliseconds) and clock skew.
    rows = values_updated_since(board_ids, since=since - CATCH_UP_MARGIN)
    values_write(rows)
    return len(rows)


# One full rebuild at a time across every worker process: the periodic job runs every 2 s on
# several processes, and a rebuild takes longer than that. A session-level advisory lock, so a
# worker that dies mid-rebuild releases it with its connection.
REBUILD_LOCK = "boards-index-rebuild"


def board_index_heal(*, grace_seconds: float | None = None) -> int:
    """Periodic: rebuild everything if Redis lost the index (one process does, the others go
    on draining), then drain the outbox."""
    if not index.built():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [REBUILD_LOCK])
            locked = cur.fetchone()[0]
        if locked:
            try:
                if not index.built():  # another process may have just finished
                    log.warning("Board index marker missing (Redis restarted or flushed): rebuilding from Postgres")
                    report = boards_rebuild()
                    log.warning("Board index rebuilt: %d entries in %.1f s", report.entries, report.seconds)
            finally:
                with connection.cursor() as cur:
                    cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", [REBUILD_LOCK])
    return outbox_drain(grace_seconds=grace_seconds)
