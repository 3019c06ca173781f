"""The sorted-set score: a player's value and the tie-break packed into one integer.

Redis keeps scores as IEEE doubles, which hold every integer below 2**53 exactly. We spend
TIME_BITS of those 53 bits on "when the value was reached" (whole seconds since EPOCH) and
the rest on the value, arranged so that a *larger* encoded number is always *better*:

    encoded = value_part * 2**TIME_BITS + (2**TIME_BITS - 1 - seconds_since_epoch)

- on a board with sub-scores the value part is mixed-radix: the score's part, then each
  sub-score's part (0 = its worst value) in declared order, each digit as wide as its range;
- value_part is (value - min_score) on desc boards, (max_score - value) on asc boards and
  min(total, max_total) - min_total on total boards, so it never goes below 0;
- an earlier time gives a larger low part, so of two equal values the earlier one wins and a
  later equal result never moves a player down (ZADD GT ignores it).

The last tie-break (player id byte order) is not in the number: readers order the rare
members with an identical encoded score by player id. See docs/encoding.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
EPOCH_UNIX = int(EPOCH.timestamp())
TIME_BITS = 29  # 2**29 s = 17.0 years of distinct tie-break seconds: 2025-01-01 .. 2042-01-04
TIME_SPAN = 1 << TIME_BITS
EXACT_BITS = 53
VALUE_BITS = EXACT_BITS - TIME_BITS
VALUE_SPAN_LIMIT = 1 << VALUE_BITS  # at most 16,777,216 distinct values per board
MAX_SUBSCORES = 3  # declared sub-scores per board (docs/api.md §2.3)


class SubscoreShape(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def order(self) -> str: ...
    @property
    def min(self) -> int: ...
    @property
    def max(self) -> int: ...


class BoardShape(Protocol):
    # read-only members, so frozen dataclasses (BoardConfig, BoardSpec) satisfy it
    @property
    def order(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def min_score(self) -> int: ...
    @property
    def max_score(self) -> int: ...
    @property
    def max_total(self) -> int | None: ...


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


@dataclass(frozen=True)
class _Subscore:
    name: str
    order: str
    min: int
    max: int


def subscores(board: BoardShape) -> tuple[SubscoreShape, ...]:
    """The board's declared sub-scores (none on boards whose shape has no such member); a stored
    board row keeps them as JSON objects (scores.models.Board.subscores)."""
    declared = getattr(board, "subscores", None) or ()
    return tuple(_Subscore(**s) if isinstance(s, dict) else s for s in declared)


def subscores_json(subs: Sequence[SubscoreShape]) -> list[dict[str, Any]]:
    """The declared sub-scores as the board row stores them."""
    return [{"name": s.name, "order": s.order, "min": s.min, "max": s.max} for s in subs]


def score_span(board: BoardShape) -> int:
    """How many distinct scores (totals on a total board) the board must tell apart."""
    if board.mode == "total":
        return max_total(board) - min_total(board) + 1
    return board.max_score - board.min_score + 1


def subscore_span(sub: SubscoreShape) -> int:
    return sub.max - sub.min + 1


def value_span(board: BoardShape) -> int:
    """How many distinct (score, sub-scores) tuples the board must tell apart."""
    return score_span(board) * math.prod(subscore_span(s) for s in subscores(board))


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
    subs = subscores(board)
    if subs:
        what = f"({what})" + "".join(f" * ({s.name}: max - min + 1)" for s in subs)
        spans = " * ".join(f"{n:,}" for n in (score_span(board), *(subscore_span(s) for s in subs)))
        return (
            f"{what} = {spans} = {span:,} distinct (score, sub-scores) tuples needs {needed} bits, but only "
            f"{VALUE_BITS} of the 53 exact bits of a sorted-set score are left after {TIME_BITS} bits of tie-break "
            f"time; narrow the ranges so that their product is at most {VALUE_SPAN_LIMIT:,}"
        )
    return (
        f"{what} = {span:,} distinct values needs {needed} bits, but only {VALUE_BITS} of the 53 exact bits "
        f"of a sorted-set score are left after {TIME_BITS} bits of tie-break time; "
        f"narrow the range to at most {VALUE_SPAN_LIMIT:,} values"
    )


def tie_seconds(reached_at: datetime) -> int:
    """Whole seconds since EPOCH, clamped into the TIME_BITS range."""
    seconds = math.floor(reached_at.timestamp()) - EPOCH_UNIX
    return min(max(seconds, 0), TIME_SPAN - 1)


def score_part(board: BoardShape, value: int) -> int:
    if board.mode == "total":
        floor = min_total(board)
        return min(max(value, floor), max_total(board)) - floor
    if board.order == "asc":
        return board.max_score - value
    return value - board.min_score


def subscore_part(sub: SubscoreShape, value: int | None) -> int:
    """A sub-score's digit: larger is better; a missing sub-score is its worst value (0)."""
    if value is None:
        return 0
    return sub.max - value if sub.order == "asc" else value - sub.min


def subradix(board: BoardShape) -> int:
    """How many distinct sub-score tuples one score spans (1 on a board without sub-scores): the
    value part is score_part * subradix + subpart."""
    return math.prod(subscore_span(s) for s in subscores(board))


def subpart(board: BoardShape, subs: Mapping[str, int] | None) -> int:
    """The sub-scores' digits as one number below subradix() (results store it: Result.subpart)."""
    part = 0
    for sub in subscores(board):
        part = part * subscore_span(sub) + subscore_part(sub, (subs or {}).get(sub.name))
    return part


def value_part(board: BoardShape, value: int, subs: Mapping[str, int] | None = None) -> int:
    """The score's part, then each declared sub-score's digit (docs/encoding.md, "Sub-scores")."""
    return score_part(board, value) * subradix(board) + subpart(board, subs)


def score_part_of(board: BoardShape, encoded: int) -> int:
    """The score's part of an encoded score, its sub-scores dropped (what anti-cheat compares)."""
    return (int(encoded) >> TIME_BITS) // subradix(board)


def decode_score_part(board: BoardShape, part: int) -> int:
    """The score a score part stands for."""
    return decode_value(board, (part * subradix(board)) << TIME_BITS)


def encode(board: BoardShape, value: int, reached_at: datetime, subs: Mapping[str, int] | None = None) -> int:
    return value_part(board, value, subs) * TIME_SPAN + (TIME_SPAN - 1 - tie_seconds(reached_at))


def _split(board: BoardShape, encoded: int) -> tuple[int, list[int]]:
    """The score's part and the sub-scores' digits of an encoded score."""
    part = int(encoded) >> TIME_BITS
    if not getattr(board, "subscores", None):
        return part, []  # most boards: every read decodes each entry, so this case is kept cheap
    digits: list[int] = []
    for sub in reversed(subscores(board)):
        part, digit = divmod(part, subscore_span(sub))
        digits.append(digit)
    return part, digits[::-1]


def decode_value(board: BoardShape, encoded: int) -> int:
    """The displayed value of an encoded score (for totals above max_total: max_total)."""
    part, _ = _split(board, encoded)
    if board.mode == "total":
        return part + min_total(board)
    if board.order == "asc":
        return board.max_score - part
    return part + board.min_score


def value_decoder(board: BoardShape) -> Callable[[int], int]:
    """decode_value for one board as a function of the encoded score alone, the board's
    constants read once: a friends board decodes ~200 scores a read."""
    if subscores(board):
        return lambda encoded: decode_value(board, encoded)
    if board.mode == "total":
        floor = min_total(board)
        return lambda encoded: (int(encoded) >> TIME_BITS) + floor
    if board.order == "asc":
        top = board.max_score
        return lambda encoded: top - (int(encoded) >> TIME_BITS)
    low = board.min_score
    return lambda encoded: (int(encoded) >> TIME_BITS) + low


def decode_subscores(board: BoardShape, encoded: int) -> dict[str, int]:
    """The sub-scores an encoded score carries ({} on a board without any)."""
    _, digits = _split(board, encoded)
    return {
        sub.name: sub.max - digit if sub.order == "asc" else digit + sub.min
        for sub, digit in zip(subscores(board), digits, strict=True)
    }


def decode_subpart(board: BoardShape, subpart: int) -> dict[str, int]:
    """The sub-scores a result's stored digits (scores_result.subpart) stand for."""
    return decode_subscores(board, int(subpart) << TIME_BITS)


# --- the same arithmetic in SQL: the one place it is spelled (set-based recomputes, totals) ---


def sql_score_part(board: BoardShape, score: str) -> str:
    """SQL for score_part() of a best or latest board's score expression (params %(min)s, %(max)s)."""
    return f"{score} - %(min)s" if board.order == "desc" else f"%(max)s - {score}"


def sql_value_part(board: BoardShape, score: str, subpart_sql: str) -> str:
    """SQL for value_part() of a best or latest board: the score's part, then the result's stored
    sub-score digits (subpart_sql: a scores_result.subpart expression; 0 without sub-scores)."""
    radix = subradix(board)
    part = sql_score_part(board, score)
    return f"({part}) * {radix} + {subpart_sql}" if radix > 1 else part


def sql_subradix(subscores_json_sql: str) -> str:
    """SQL for subradix() of a board row's subscores JSON column (at most MAX_SUBSCORES items;
    a missing item counts 1), for statements over the rows of many boards."""
    return " * ".join(
        f"COALESCE(({subscores_json_sql}->{i}->>'max')::bigint - ({subscores_json_sql}->{i}->>'min')::bigint + 1, 1)"
        for i in range(MAX_SUBSCORES)
    )


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
