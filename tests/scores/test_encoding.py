from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from scores import encoding


@dataclass
class B:
    order: str = "desc"
    mode: str = "best"
    min_score: int = 0
    max_score: int = 10_000_000
    max_total: int | None = None
    min_total: int | None = None


instants = st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2041, 12, 31), timezones=st.just(UTC))


BOARDS = [
    B(),
    B(order="asc", min_score=-500, max_score=16_000_000),
    B(mode="total"),
    B(mode="latest", min_score=-100, max_score=100),
    B(mode="total", min_score=-50, max_score=50, min_total=-1000),
]


@given(st.sampled_from(BOARDS), st.data())
def test_encoding_orders_by_value_then_earlier_time(board, data) -> None:
    if board.mode == "total":
        lo, hi = encoding.min_total(board), encoding.max_total(board)
    else:
        lo, hi = board.min_score, board.max_score
    a_val, b_val = (data.draw(st.integers(lo, hi)) for _ in range(2))
    a_at, b_at = data.draw(instants), data.draw(instants)
    a, b = encoding.encode(board, a_val, a_at), encoding.encode(board, b_val, b_at)
    assert 0 <= a < 2**53 and float(a) == a  # exact as a Redis double
    better = (a_val > b_val) if (board.order == "desc") else (a_val < b_val)
    if a_val == b_val:
        assert (a > b) == (int(a_at.timestamp()) < int(b_at.timestamp()))
    else:
        assert (a > b) == better
    assert encoding.decode_value(board, a) == a_val == encoding.value_decoder(board)(a)


def test_budget_refuses_ranges_that_do_not_fit() -> None:
    assert encoding.budget_problem(B(max_score=2**24 - 1)) is None
    problem = encoding.budget_problem(B(max_score=2**24))
    assert problem and "24" in problem and "max_score" in problem
    assert encoding.budget_problem(B(mode="total", max_total=2**24)) is not None


def test_times_outside_the_budget_are_clamped() -> None:
    board = B()
    early = encoding.encode(board, 5, encoding.EPOCH - timedelta(days=400))
    assert early == encoding.encode(board, 5, encoding.EPOCH)
    late = encoding.EPOCH + timedelta(seconds=encoding.TIME_SPAN + 10)
    assert encoding.encode(board, 5, late) == encoding.encode(
        board, 5, encoding.EPOCH + timedelta(seconds=encoding.TIME_SPAN - 1)
    )
    assert encoding.encode(board, 6, late) > encoding.encode(board, 5, encoding.EPOCH)


def test_totals_saturate_at_max_total() -> None:
    board = B(mode="total", max_total=100)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert encoding.encode(board, 150, at) == encoding.encode(board, 100, at)
    assert encoding.decode_value(board, encoding.encode(board, 150, at)) == 100


def test_a_total_with_a_floor_spends_its_budget_from_the_floor() -> None:
    board = B(mode="total", min_score=-5, min_total=-100)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert encoding.encode(board, -100, at) >> encoding.TIME_BITS == 0
    assert encoding.encode(board, -500, at) == encoding.encode(board, -100, at)  # below the floor: the floor
    assert encoding.max_total(board) == -100 + 2**24 - 1
    assert encoding.budget_problem(board) is None
    problem = encoding.budget_problem(B(mode="total", min_score=-5, min_total=-100, max_total=2**24 - 100))
    assert problem and "max_total - min_total + 1" in problem
