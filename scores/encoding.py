"""The sorted-set score: a player's value and the tie-break packed into one integer.

Redis keeps scores as IEEE doubles, which hold every integer below 2**53 exactly. We spend
TIME_BITS of those 53 bits on "when the value was reached" (whole seconds since EPOCH) and
the rest on the value, arranged so that a *larger* encoded number is always *better*:

    encoded = value_part * 2**TIME_BITS + (2**TIME_BITS - 1 - seconds_since_epoch)

- value_part is (value - min_score) on desc boards, (max_score - value) on asc boards and
  min(total, max_total) - min_total on total boards, so it never goes below 0;
- an earlier time gives a larger low part, so of two equal values the earlier one wins and a
  later equal result never moves a player down (ZADD GT ignores it).

The last tie-break (player id byte order) is not in the number: readers order the rare
members with an identical encoded score by player id. See docs/encoding.md.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Protocol

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
EPOCH_UNIX = int(EPOCH.timestamp())
TIME_BITS = 29  # 2**29 s = 17.0 years of distinct tie-break seconds: 2025-01-01 .. 2042-01-04
TIME_SPAN = 1 << TIME_BITS
EXACT_BITS = 53
VALUE_BITS = EXACT_BITS - TIME_BITS
VALUE_SPAN_LIMIT = 1 << VALUE_BITS  # at most 16,777,216 distinct values per board


class BoardShape(Protocol):
    order: str
    mode: str
    min_score: int
    max_score: int
    max_total: int | None


def may_fall(board: BoardShape) -> bool:
    """Whether a value of the board can go down on ingest (a latest board; a total whose results
    may subtract): its sorted sets take absolute writes, never ZADD GT (docs/encoding.md)."""
    return board.mode == "latest" or (board.mode == "total" and board.min_score < 0)


def min_total(board: BoardShape) -> int:
    """The floor of a total board's totals (0 unless results may subtract)."""
    floor = getattr(board, "min_total", None)
    return floor if floor is not None else 0


def default_max_total(floor: int = 0) -> int:
    return floor + VALUE_SPAN_LIMIT - 1


def max_total(board: BoardShape) -> int:
    return board.max_total if board.max_total is not None else default_max_total(min_total(board))


def value_span(board: BoardShape) -> int:
    """How many distinct values the board must tell apart."""
    if board.mode == "total":
        return max_total(board) - min_total(board) + 1
    return board.max_score - board.min_score + 1


def budget_problem(board: BoardShape) -> str | None:
    """Why the board's value range does not fit the 53-bit budget, or None if it fits."""
    span = value_span(board)
    if span <= VALUE_SPAN_LIMIT:
        return None
    needed = math.ceil(math.log2(span))
    if board.mode != "total":
        what = "max_score - min_score + 1"
    else:
        what = "max_total - min_total + 1" if min_total(board) else "max_total + 1"
    return (
        f"{what} = {span:,} distinct values needs {needed} bits, but only {VALUE_BITS} of the 53 exact bits "
        f"of a sorted-set score are left after {TIME_BITS} bits of tie-break time; "
        f"narrow the range to at most {VALUE_SPAN_LIMIT:,} values"
    )


def tie_seconds(reached_at: datetime) -> int:
    """Whole seconds since EPOCH, clamped into the TIME_BITS range."""
    seconds = math.floor(reached_at.timestamp()) - EPOCH_UNIX
    return min(max(seconds, 0), TIME_SPAN - 1)


def value_part(board: BoardShape, value: int) -> int:
    if board.mode == "total":
        floor = min_total(board)
        return min(max(value, floor), max_total(board)) - floor
    if board.order == "asc":
        return board.max_score - value
    return value - board.min_score


def encode(board: BoardShape, value: int, reached_at: datetime) -> int:
    return value_part(board, value) * TIME_SPAN + (TIME_SPAN - 1 - tie_seconds(reached_at))


def decode_value(board: BoardShape, encoded: int) -> int:
    """The displayed value of an encoded score (for totals above max_total: max_total)."""
    part = int(encoded) >> TIME_BITS
    if board.mode == "total":
        return part + min_total(board)
    if board.order == "asc":
        return board.max_score - part
    return part + board.min_score


# --- the same arithmetic in SQL: the one place it is spelled (set-based recomputes, totals) ---


def sql_value_part(board: BoardShape, score: str) -> str:
    """SQL for value_part() of a best board's score expression (params %(min)s, %(max)s)."""
    return f"{score} - %(min)s" if board.order == "desc" else f"%(max)s - {score}"


def sql_encoded(value_part_sql: str, reached_at_sql: str) -> str:
    """SQL for encode(): a value part times TIME_SPAN plus the inverted tie-break seconds of a
    timestamptz expression, clamped as tie_seconds() clamps (params of sql_params())."""
    return (
        f"({value_part_sql}) * %(span)s + (%(span)s - 1 - LEAST(GREATEST("
        f"floor(extract(epoch FROM {reached_at_sql}))::bigint - %(epoch)s, 0), %(span)s - 1))"
    )


def sql_params(board: BoardShape | None = None) -> dict[str, int]:
    """The parameters the SQL fragments above name."""
    params = {"span": TIME_SPAN, "epoch": EPOCH_UNIX}
    if board is not None:
        params.update(min=board.min_score, max=board.max_score)
    return params
