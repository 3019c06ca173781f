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

from django.db import connection, transaction
from django.utils import timezone
from redis import Redis

from boards import keys
from boards.redis import get_redis
from boards.services import BUILD_KEY_TTL, REBUILD_CHUNK
from scores import encoding
from scores.models import Board
from scores.windows import ROLLING_WINDOWS, daily_key

log = logging.getLogger(__name__)

# A player's best over days whose sorted set has left Redis: the largest encoded score.
_BEST_SQL = """
SELECT player_id, MAX(encoded)
FROM scores_playervalue
WHERE board_id = %s AND "window" = ANY(%s)
GROUP BY player_id
"""

# One row per player over the window's daily rows. reached_at follows total_reached_at():
# the latest moment among the days that added something, else the earliest.
_TOTALS_SQL = """
SELECT player_id, SUM(value)::bigint,
       COALESCE(MAX(reached_at) FILTER (WHERE value > 0), MIN(reached_at))
FROM scores_playervalue
WHERE board_id = %s AND "window" = ANY(%s)
GROUP BY player_id
"""


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
    r = get_redis()
    for board in candidates:
        wanted = rolling_windows_of(board)
        if not wanted:
            continue
        report.boards += 1
        today = now.astimezone(ZoneInfo(board.game.reset_timezone)).date()
        for window in wanted:
            report.entries += rolling_window_build(r, board, window, today)
            report.windows += 1
    report.seconds = time.monotonic() - started
    return report


def rolling_window_build(r: Redis, board: Board, window: str, today: date) -> int:
    """Replace one rolling window of a board; return how many players it holds."""
    days = rolling_days(window, today)
    live = keys.board_key(board.id, window)
    scratch = keys.build_key(secrets.token_hex(4), board.id, window)
    try:
        if board.mode == "total":
            count = _stream(r, scratch, _TOTALS_SQL, [board.id, days], lambda t, at: encoding.encode(board, t, at))
            pipe = r.pipeline(transaction=True)
            if count:
                pipe.rename(scratch, live)
                pipe.persist(live)  # the scratch key's expiry must not follow it
            else:
                pipe.delete(live)
            pipe.execute()
            return count
        return _best_build(r, board, days, live, scratch)
    finally:
        with contextlib.suppress(Exception):  # Redis may be what failed: the expiry cleans up then
            r.delete(scratch)


def _best_build(r: Redis, board: Board, days: list[str], live: str, scratch: str) -> int:
    daily = [keys.board_key(board.id, day) for day in days]
    pipe = r.pipeline(transaction=False)
    for key in daily:
        pipe.exists(key)
    present = pipe.execute()
    sources = [key for key, here in zip(daily, present, strict=True) if here]
    gone = [day for day, here in zip(days, present, strict=True) if not here]
    if gone and _stream(r, scratch, _BEST_SQL, [board.id, gone], lambda encoded: encoded):
        sources.append(scratch)
    if not sources:
        r.delete(live)  # nobody played in the window: no key, as for any empty window
        return 0
    # one command: readers see the old union or the new one
    return int(r.zunionstore(live, sources, aggregate="MAX"))


def _stream(r: Redis, scratch: str, sql: str, params: list[Any], encode: Callable[..., int]) -> int:
    """Stream (player_id, *columns) rows into a scratch sorted set, scored by encode(*columns)."""
    count = 0
    with transaction.atomic(), connection.chunked_cursor() as cur:
        cur.execute(sql, params)
        while rows := cur.fetchmany(REBUILD_CHUNK):
            mapping = {str(pk): encode(*rest) for pk, *rest in rows}
            pipe = r.pipeline(transaction=False)
            pipe.zadd(scratch, mapping)
            pipe.expire(scratch, BUILD_KEY_TTL)  # a refresh that dies leaves nothing behind for long
            pipe.execute()
            count += len(mapping)
    return count
