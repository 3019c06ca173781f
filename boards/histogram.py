"""Score histograms: how many players stand in each score bucket of a board window
(docs/api.md §5, `GET .../histogram`). See docs/reads.md ("Histograms").

Built from the sorted set without scanning it: one pipelined round trip of single-member
`ZRANGE key r r WITHSCORES` at ~1000 quantile ranks gives the bucket boundaries (value parts
of the encoded scores, docs/encoding.md), then one MULTI of `ZCOUNT` per boundary range gives
exact counts, together with `ZCARD` and the two ends of the set: O(buckets * log N).
Quantile slices that share a value are merged, so buckets never overlap. The first range is
open below and the last open above, so the counts always sum to the total read in the same
MULTI, even if the board changed between the two round trips.

The result is stored as JSON in a hash (`keys.histogram_key`) with the signature of the set
it was built from (ZCARD, first and last member with their scores). The scheduled refresh
rebuilds a window only when that signature changed or the stored histogram is older than
MAX_AGE (a change in the middle of a board leaves the signature as it was).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from boards import index
from rediskit import keys
from rediskit.client import REDIS_DOWN
from scores import encoding, windows
from scores.models import Game
from scores.selectors import BoardConfig, cached_game_config

BUCKETS = 1000
MAX_AGE = 300  # seconds: a window that looks unchanged is rebuilt anyway after this
HISTOGRAM_TTL = 3600  # refreshed windows are re-armed every minute; others fade out (see docs/reads.md)


@dataclass(frozen=True)
class Bucket:
    min: int  # displayed values, min <= max on every board
    max: int
    count: int


@dataclass(frozen=True)
class Histogram:
    window: str
    order: str  # the board's order: "desc" ranks the last bucket first, "asc" the first
    total: int
    refreshed_at: datetime | None
    buckets: tuple[Bucket, ...]
    degraded: bool = False
    changes: int = 0  # sharded boards: the windows' write counters when it was built

    def to_json(self) -> str:
        return json.dumps(
            {
                "window": self.window,
                "order": self.order,
                "total": self.total,
                "refreshed_at": self.refreshed_at.isoformat() if self.refreshed_at else None,
                "buckets": [[b.min, b.max, b.count] for b in self.buckets],
                "changes": self.changes,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> Histogram:
        data = json.loads(raw)
        at = data["refreshed_at"]
        return cls(
            window=data["window"],
            order=data["order"],
            total=data["total"],
            refreshed_at=datetime.fromisoformat(at) if at else None,
            buckets=tuple(Bucket(lo, hi, n) for lo, hi, n in data["buckets"]),
            changes=data.get("changes", 0),
        )


@dataclass
class HistogramReport:
    windows: int = 0
    built: int = 0
    skipped: int = 0  # unchanged since their last refresh
    seconds: float = 0.0


# --- building ---------------------------------------------------------------------------------


def _signature(card: int, first: list[tuple[Any, float]], last: list[tuple[Any, float]]) -> str:
    ends = [[_text(m), int(s)] for m, s in (*first, *last)]
    return json.dumps([int(card), ends])


def _text(member: Any) -> str:
    return member.decode() if isinstance(member, bytes) else str(member)


def _part(score: float, span: int) -> int:
    """The score's part of an encoded score (span: TIME_SPAN times the board's sub-score radix,
    so a board with sub-scores is bucketed by score, never splitting one score over two buckets)."""
    return int(score) // span


def _sorted_ends(replies: list[Any]) -> tuple[int, list, list]:
    """(card, lowest, highest) over shards from per-shard ZCARD, ZRANGE 0 0, ZRANGE -1 -1 replies."""
    card = sum(int(replies[i]) for i in range(0, len(replies), 3))
    firsts = [x[0] for x in replies[1::3] if x]
    lasts = [x[0] for x in replies[2::3] if x]
    first = [min(firsts, key=lambda m: (m[1], m[0]))] if firsts else []
    last = [max(lasts, key=lambda m: (m[1], m[0]))] if lasts else []
    return card, first, last


def _ends_ops(set_keys: list[str]) -> list[tuple]:
    ops: list[tuple] = []
    for key in set_keys:
        ops += [("zcard", key), ("zrange", key, 0, 0, False, True), ("zrange", key, -1, -1, False, True)]
    return ops


def histogram_build(
    board: BoardConfig, window: str, *, now: datetime | None = None, buckets: int = BUCKETS, store: bool = True
) -> Histogram:
    """Build (and by default store) the histogram of one board window (of all its shards: the
    bucket boundaries from every shard's quantiles, the counts summed over shards)."""
    now = now or timezone.now()
    set_keys = keys.shard_keys(board.id, window, board.shards)
    sharded = len(set_keys) > 1
    span = encoding.TIME_SPAN * encoding.subradix(board)

    # 0. sharded boards: the write counters before counting, so the error bound of an estimate
    #    made from this histogram covers every change the counts may have missed
    changes = 0
    if sharded:
        changes = sum(int(x or 0) for x in index.batch([("get", keys.changes_key(k)) for k in set_keys]))

    # 1. boundaries: the value part at ~`buckets` quantile ranks, ascending encoded order
    cards = [int(x) for x in index.batch([("zcard", k) for k in set_keys])]
    starts = [0]  # one range, open at both ends, if the board is (or looked) empty
    ops = []
    for key, card in zip(set_keys, cards, strict=True):
        if card:
            wanted = max(1, min(buckets // len(set_keys), card))
            ops += [
                ("zrange", key, rank, rank, False, True) for rank in sorted({i * card // wanted for i in range(wanted)})
            ]
    if ops:
        starts = sorted({_part(reply[0][1], span) for reply in index.batch(ops) if reply}) or starts

    # 2. exact counts between consecutive boundaries, atomically with the total and both ends
    #    (one MULTI per set on one Redis; per shard, a moment apart, on a cluster)
    ops = []
    for key in set_keys:
        ops += _ends_ops([key])
        for j, start in enumerate(starts):
            lo = "-inf" if j == 0 else start * span
            hi = "+inf" if j == len(starts) - 1 else f"({starts[j + 1] * span}"
            ops.append(("zcount", key, lo, hi))
    replies = index.batch(ops, transaction=True)
    per = 3 + len(starts)
    ends: list[Any] = []
    counts = [0] * len(starts)
    for i in range(len(set_keys)):
        chunk = replies[i * per : (i + 1) * per]
        ends += chunk[:3]
        for j, c in enumerate(chunk[3:]):
            counts[j] += int(c)
    total, first, last = _sorted_ends(ends)
    if sharded:
        total = sum(counts)

    parts: list[tuple[int, int, int]] = []  # (lowest part, highest part, count), ascending
    if first and last:
        for j, count in enumerate(counts):
            if not count:
                continue  # emptied between the two round trips
            lo = _part(first[0][1], span) if j == 0 else starts[j]
            hi = _part(last[0][1], span) if j == len(starts) - 1 else starts[j + 1] - 1
            parts.append((lo, hi, int(count)))
    histogram = Histogram(
        window=window,
        order=_order(board),
        total=int(total),
        refreshed_at=now,
        buckets=tuple(_display(board, parts)),
        changes=changes,
    )
    if store:
        hkey = keys.histogram_key(board.id, window)
        pipe = index.pipeline(transaction=True)
        pipe.hset(
            hkey,
            mapping={
                "body": histogram.to_json(),
                "sig": _signature(*_sorted_ends(ends)),
                "built_at": repr(now.timestamp()),
            },
        )
        pipe.expire(hkey, HISTOGRAM_TTL)
        pipe.execute()
    return histogram


def _value(board: BoardConfig, part: int) -> int:
    return encoding.decode_score_part(board, part)


def _order(board: BoardConfig) -> str:
    """Which value ranks first: "desc" (higher, as on every total board) or "asc" (lower)."""
    return "desc" if _value(board, 1) > _value(board, 0) else "asc"


def _display(board: BoardConfig, parts: list[tuple[int, int, int]]) -> list[Bucket]:
    """Value-part ranges (ascending) as displayed buckets, lowest value first."""
    out = []
    for lo, hi, count in parts:
        a, b = _value(board, lo), _value(board, hi)
        out.append(Bucket(min(a, b), max(a, b), count))
    # on asc boards a higher value part is a lower value
    return out[::-1] if _order(board) == "asc" else out


# --- the scheduled refresh --------------------------------------------------------------------


def refreshed_windows(board: BoardConfig, now: datetime) -> list[str]:
    """The windows the refresh keeps: the current explicit window of each kind the board
    keeps ("all", today's, this week's, this month's, every running season) and its rolling
    windows."""
    plain = [k for k in board.windows if k not in windows.ROLLING_WINDOWS]
    rolling = [k for k in board.windows if k in windows.ROLLING_WINDOWS] if "daily" in board.windows else []
    return list(dict.fromkeys(windows.windows_for(now, board.reset_timezone, plain, board.seasons) + rolling))


def all_boards() -> list[BoardConfig]:
    found: list[BoardConfig] = []
    for slug in Game.objects.order_by("id").values_list("slug", flat=True):
        config = cached_game_config(slug)
        if config is not None:
            found.extend(config.boards.values())
    return found


def histograms_refresh(now: datetime | None = None, *, boards: Iterable[BoardConfig] | None = None) -> HistogramReport:
    """Rebuild the histogram of every refreshed board window whose sorted set changed (or
    whose histogram is older than MAX_AGE); keep the others alive."""
    started = time.monotonic()
    now = now or timezone.now()
    targets = [(b, w) for b in (all_boards() if boards is None else boards) for w in refreshed_windows(b, now)]
    report = HistogramReport(windows=len(targets))
    if not targets:
        return report
    ops: list[tuple] = []
    for board, window in targets:
        ops += _ends_ops(keys.shard_keys(board.id, window, board.shards))
        ops.append(("hmget", keys.histogram_key(board.id, window), "sig", "built_at"))
    replies = index.batch(ops)
    keep = index.pipeline(transaction=False)
    at = 0
    for board, window in targets:
        n = 3 * max(1, board.shards)
        card, first, last = _sorted_ends(replies[at : at + n])
        sig, built_at = replies[at + n]
        at += n + 1
        fresh = built_at is not None and now.timestamp() - float(built_at) < MAX_AGE
        if fresh and sig is not None and _text(sig) == _signature(card, first, last):
            keep.expire(keys.histogram_key(board.id, window), HISTOGRAM_TTL)
            report.skipped += 1
        else:
            histogram_build(board, window, now=now)
            report.built += 1
    keep.execute()
    report.seconds = time.monotonic() - started
    return report


# --- reading ----------------------------------------------------------------------------------


def histogram_read(board: BoardConfig, window: str) -> Histogram:
    """The stored histogram of a board window. A window the refresh has not stored yet (one
    that is not current, or before the first refresh) is computed once, here, and stored;
    an empty one is not stored. With Redis unreachable: an empty, degraded histogram."""
    try:
        r = index.index(replicas=True)
        raw = r.hget(keys.histogram_key(board.id, window), "body")
        if raw is not None:
            return Histogram.from_json(raw)
        if not sum(index.batch([("exists", k) for k in keys.shard_keys(board.id, window, board.shards)])):
            return Histogram(window, _order(board), 0, None, ())
        return histogram_build(board, window)
    except REDIS_DOWN:
        return Histogram(window, _order(board), 0, None, (), degraded=True)


def approximate_rank(histogram: Histogram, value: int) -> int:
    """The rank a player with `value` has, estimated from the histogram: 1 + everyone in
    buckets wholly better than `value`, + the share of its own bucket above it (linear in the
    bucket's value range). Off by at most the count of the bucket holding `value`."""
    desc = histogram.order == "desc"
    above = 0
    for b in histogram.buckets:
        if (b.min > value) if desc else (b.max < value):
            above += b.count
        elif b.min <= value <= b.max:
            width = b.max - b.min + 1
            share = (b.max - value) if desc else (value - b.min)
            above += b.count * share // width
    return above + 1
