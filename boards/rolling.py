"""Rolling windows (`last7d`, `last30d`): built on a schedule from the daily windows, never
per request. See docs/encoding.md ("Rolling windows").

"Last N days" is the N daily windows ending today in the game's reset time zone, today
included. A rolling window is rebuilt whole on every refresh, so a day drops out of it at
the first refresh after local midnight.

- best boards: one `ZUNIONSTORE lb:{board}:last7d <daily keys> AGGREGATE MAX`. The largest
  encoded score of a player over those days is exactly their best value with the earliest
  second it was reached (docs/encoding.md). ZUNIONSTORE replaces its destination in one
  command, so readers see the old window or the new one, never a partial union. Days whose
  sorted set is no longer in Redis (closed windows expire after the game's retention, see
  scores.windows.expires_at) are read from Postgres (MAX(encoded) per player) into a scratch
  key that joins the union.
- total boards: summing encoded scores would also sum their time parts, which carry into the
  value bits. Totals are aggregated in Postgres instead (SUM(value), and reached_at by
  scores.projection.values.total_reached_at's rule), encoded with scores.encoding, streamed into a
  scratch key and RENAMEd over the live key.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.utils import timezone

from boards import index
from boards.services import BUILD_KEY_TTL, REBUILD_CHUNK
from rediskit import keys
from scores import encoding
from scores.models import Board
from scores.selectors import best_over_days_stream, totals_over_days_stream
from scores.windows import ROLLING_WINDOWS, daily_key

log = logging.getLogger(__name__)


@dataclass
class RollingReport:
    boards: int = 0
    windows: int = 0
    entries: int = 0
    seconds: float = 0.0


def rolling_days(window: str, today: date) -> list[str]:
    """The explicit daily windows a rolling window covers, today first."""
    return [daily_key(today - timedelta(days=i)) for i in range(ROLLING_WINDOWS[window])]


def rolling_windows_of(board: Board) -> list[str]:
    """The rolling windows a board keeps (they need "daily": config refuses them without it)."""
    if "daily" not in board.windows:
        return []
    return [w for w in board.windows if w in ROLLING_WINDOWS]


def rolling_windows_refresh(now: datetime | None = None, *, boards: Iterable[Board] | None = None) -> RollingReport:
    """Rebuild every rolling window of every board (or of `boards`) as of `now`."""
    started = time.monotonic()
    now = now or timezone.now()
    candidates = Board.objects.select_related("game").order_by("id") if boards is None else boards
    report = RollingReport()
    for board in candidates:
        wanted = rolling_windows_of(board)
        if not wanted:
            continue
        report.boards += 1
        today = now.astimezone(ZoneInfo(board.game.reset_timezone)).date()
        for window in wanted:
            report.entries += rolling_window_build(board, window, today)
            report.windows += 1
    report.seconds = time.monotonic() - started
    return report


def _shards(board: Board) -> list[int | None]:
    return [None] if board.shards <= 1 else list(range(board.shards))


def rolling_window_build(board: Board, window: str, today: date) -> int:
    """Replace one rolling window of a board (each of its shards); return how many players it holds."""
    days = rolling_days(window, today)
    token = secrets.token_hex(4)
    scratch = {s: keys.build_key(token, board.id, window, s) for s in _shards(board)}
    try:
        if board.mode == "total":
            streamed = _stream(
                board,
                scratch,
                totals_over_days_stream(board.id, days=days, chunk=REBUILD_CHUNK),
                lambda t, at: encoding.encode(board, t, at),
            )
            pipe = index.pipeline(transaction=True)
            for s, key in scratch.items():
                live = keys.board_key(board.id, window, s)
                if streamed[s]:
                    pipe.rename(key, live)
                    pipe.persist(live)  # the scratch key's expiry must not follow it
                else:
                    pipe.delete(live)
                _count_change(pipe, live, streamed[s])
            pipe.execute()
            return sum(streamed.values())
        return _best_build(board, days, window, scratch)
    finally:
        with contextlib.suppress(Exception):  # Redis may be what failed: the expiry cleans up then
            pipe = index.pipeline(transaction=False)
            for key in scratch.values():
                pipe.delete(key)
            pipe.execute()


def _count_change(pipe: Any, live: str, members: int) -> None:
    if keys.parse_board_key(live)[1] is not None:  # sharded: estimated ranks count the change
        pipe.incrby(keys.changes_key(live), max(1, members))


def _best_build(board: Board, days: list[str], window: str, scratch: dict[int | None, str]) -> int:
    pipe = index.pipeline(transaction=False)
    for s in scratch:
        for day in days:
            pipe.exists(keys.board_key(board.id, day, s))
    present = pipe.execute()
    # a day's sets are all there or all gone (they expire together); shard 0 decides
    here = dict(zip(days, present[: len(days)], strict=True))
    gone = [day for day in days if not here[day]]
    streamed = dict.fromkeys(scratch, 0)
    if gone:
        streamed = _stream(
            board,
            scratch,
            best_over_days_stream(board.id, days=gone, chunk=REBUILD_CHUNK),
            lambda encoded: encoded,
        )
    pipe = index.pipeline(transaction=False)
    unions = []  # positions of the ZUNIONSTORE replies (each says how many members it stored)
    queued = 0
    for s, key in scratch.items():
        live = keys.board_key(board.id, window, s)
        sources = [keys.board_key(board.id, day, s) for day in days if here[day]]
        if streamed[s]:
            sources.append(key)
        if sources:
            # one command: readers see the old union or the new one
            pipe.zunionstore(live, sources, aggregate="MAX")
            unions.append(queued)
        else:
            pipe.delete(live)  # nobody played in the window: no key, as for any empty window
        queued += 1
        if board.shards > 1:
            _count_change(pipe, live, 1)
            queued += 1
    replies = pipe.execute()
    return sum(int(replies[i]) for i in unions)


def _stream(
    board: Board, scratch: dict[int | None, str], chunks: Iterable[list[tuple]], encode: Callable[..., int]
) -> dict[int | None, int]:
    """Stream (player_id, *columns) rows into each player's shard's scratch sorted set,
    scored by encode(*columns); returns members per shard."""
    counts = dict.fromkeys(scratch, 0)
    sharded = board.shards > 1
    for rows in chunks:
        by_shard: dict[int | None, dict[str, int]] = {s: {} for s in scratch}
        for pk, *rest in rows:
            by_shard[keys.shard_of(pk, board.shards) if sharded else None][str(pk)] = encode(*rest)
        pipe = index.pipeline(transaction=False)
        for s, mapping in by_shard.items():
            if mapping:
                pipe.zadd(scratch[s], mapping)
                pipe.expire(scratch[s], BUILD_KEY_TTL)  # a refresh that dies leaves nothing behind for long
                counts[s] += len(mapping)
        pipe.execute()
    return counts
