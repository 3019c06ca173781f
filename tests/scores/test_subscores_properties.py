"""Property: boards with sub-scores (docs/encoding.md, "Sub-scores") end, after any interleaving
of submissions (single and batched, retries, sub-scores missing, out of bounds or not declared),
projector batches, crashes, voids and full rebuilds, with Postgres and Redis holding exactly
what the plain-Python reference model holds for the matches still counting: the same values,
the same sub-scores (the best whole tuple on a best board, never a mix) and the same order, on
one Redis and on the local Redis Cluster with boards of 4 shards. The driver is
tests/interleavings.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scores import encoding
from scores.models import PlayerValue
from scores.selectors import cached_board
from tests.interleavings import Interleaving, assert_boards_match, matches, operations
from tests.properties import examples
from tests.reference import RefBoard

pytestmark = [
    pytest.mark.usefixtures("topology"),  # one Redis, and the cluster with sharded boards
    pytest.mark.without_projector("the interleaving drives the projector batch by batch"),
]

BOARDS = [
    # fewest strokes, then most birdies, then fewest penalties
    RefBoard("golf", "asc", "best", 60, 64, subscores=(("birdies", "desc", 0, 3), ("penalties", "asc", 0, 2))),
    RefBoard("arena", "desc", "best", 0, 3, subscores=(("kills", "desc", -1, 2),)),
    RefBoard("rating", "desc", "latest", 0, 4, subscores=(("streak", "asc", 0, 3),)),
    RefBoard("plain", "desc", "best", 0, 3),  # none declared: any sent is refused
]
MOMENTS = ["2026-11-01T00:00:00+00:00", "2026-11-01T00:00:00.500+00:00", "2026-11-01T00:00:01+00:00",
           "2026-11-02T00:00:00+00:00"]  # fmt: skip
PLAYERS = ["a", "B", "c"]
MATCH_IDS = ["m0", "m1", "M1", "m2", "z"]


def _subscores(b: RefBoard) -> st.SearchStrategy:
    declared = {n: st.integers(lo, hi) for n, _, lo, hi in b.subscores}
    fine = st.fixed_dictionaries({}, optional=declared)
    # now and then out of bounds, or a name the board does not declare: a 400
    wrong = st.one_of(
        *[st.just({n: hi + 1}) for n, _, _, hi in b.subscores],
        st.just({"speed": 1}),
    )
    return st.one_of(fine, fine, fine, fine, fine, fine, wrong)


def _result(b: RefBoard) -> st.SearchStrategy:
    return st.fixed_dictionaries(
        {"player": st.sampled_from(PLAYERS), "board": st.just(b.slug), "score": st.integers(b.min_score, b.max_score)},
        optional={"subscores": _subscores(b)},
    )


result = st.sampled_from(BOARDS).flatmap(_result)
operation = operations(matches(result, MATCH_IDS, MOMENTS), lost_redis=False)


def _one(match_id: str, at: str, score: int, subs: dict | None, board: str = "golf", player: str = "a") -> dict:
    r: dict = {"player": player, "board": board, "score": score}
    if subs is not None:
        r["subscores"] = subs
    return {"match_id": match_id, "ended_at": at, "results": [r]}


def _refusal(match: dict) -> dict:
    """The error docs/api.md §2.3 promises for the first result the board cannot take: its field,
    the sub-score's name and the board's bounds or declared names, checked in the order sent."""
    for i, r in enumerate(match["results"]):
        board = next(b for b in BOARDS if b.slug == r["board"])
        if not board.min_score <= r["score"] <= board.max_score:
            message = f"results[{i}].score: {r['score']} is outside [{board.min_score}, {board.max_score}] "
            return {"code": "score_out_of_bounds", "message": message + f"of board {board.slug!r}"}
        bounds = {n: (lo, hi) for n, _, lo, hi in board.subscores}
        for name, value in r.get("subscores", {}).items():
            if name not in bounds:
                names = ", ".join(repr(n) for n in bounds) or "none"
                message = f"board {board.slug!r} has no sub-score {name!r} (it declares {names})"
                return {"code": "invalid_match", "message": f"results[{i}].subscores.{name}: {message}"}
            lo, hi = bounds[name]
            if not lo <= value <= hi:
                message = f"{value} is outside [{lo}, {hi}] of board {board.slug!r}"
                return {"code": "score_out_of_bounds", "message": f"results[{i}].subscores.{name}: {message}"}
    raise AssertionError(f"the reference takes {match}")


def _refused(match: dict, body: dict) -> None:
    """A 400 here names the one score or sub-score the board refuses, exactly."""
    assert body == {"error": _refusal(match)}, match


@pytest.fixture
def world(transactional_db) -> Interleaving:
    return Interleaving("subs", BOARDS, refused=_refused)


@settings(
    max_examples=examples(loop=25, deep=60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=1, max_size=14))
# the same score: the better first sub-score wins although its second is worse; then a void of
# it brings back the previous best whole tuple, never a mix of the two
@example(
    ops=[
        ("one", _one("m0", MOMENTS[0], 62, {"birdies": 1, "penalties": 0})),
        ("one", _one("m1", MOMENTS[2], 62, {"birdies": 2, "penalties": 2})),
        ("one", _one("m2", MOMENTS[3], 63, {"birdies": 3, "penalties": 0})),
        ("project", 4),
        ("void", 1),
    ]
)
# a missing sub-score is its worst value: an equal score with it given ranks first
@example(
    ops=[
        ("one", _one("m0", MOMENTS[0], 2, None, "arena", "a")),
        ("one", _one("m1", MOMENTS[2], 2, {"kills": -1}, "arena", "B")),
        ("one", _one("m2", MOMENTS[2], 2, {"kills": 0}, "arena", "c")),
        ("project", 4),
    ]
)
# a latest board takes the latest whole result, sub-scores and all, even when they are worse
@example(
    ops=[
        ("one", _one("m0", MOMENTS[0], 3, {"streak": 0}, "rating")),
        ("project", 4),
        ("one", _one("m1", MOMENTS[1], 3, {"streak": 3}, "rating")),
        ("project", 4),
        ("void", 1),
    ]
)
def test_boards_with_subscores_under_any_interleaving_match_the_reference(world: Interleaving, ops) -> None:
    ref = world.run(ops)
    configs = {b.slug: cached_board("subs", board_slug=b.slug) for b in BOARDS}
    values = {
        (pv.board.slug, pv.window, pv.player.external_id): (
            pv.value,
            pv.reached_at,
            encoding.decode_subscores(configs[pv.board.slug], pv.encoded),
        )
        for pv in PlayerValue.objects.select_related("board", "player")
    }
    assert values == {k: (v.value, v.reached_at, ref.subscores_of(*k)) for k, v in ref.values.items()}
    assert_boards_match(world.game, ref)
