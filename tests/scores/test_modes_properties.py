"""Property: boards whose values may fall (latest; totals whose results subtract, clamped at
their floor: docs/encoding.md, "Values that fall") end,
after any interleaving of submissions (retries, duplicates, batches, results older than the
value they meet), projector batches, crashes before a commit and between the commit and the
Redis write, voids and full rebuilds, with Postgres and Redis holding exactly what the
plain-Python reference model holds for the matches still counting: on one Redis, and on the
local Redis Cluster with boards of 4 shards. The driver is tests/interleavings.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scores.models import PlayerValue
from tests.feed import feed_read, feed_replay
from tests.interleavings import Interleaving, assert_boards_match, matches, operations
from tests.properties import examples
from tests.reference import RefBoard

pytestmark = [
    pytest.mark.usefixtures("topology"),  # one Redis, and the cluster with sharded boards
    pytest.mark.without_projector("the interleaving drives the projector batch by batch"),
]

BOARDS = [
    RefBoard("elo", "desc", "latest", 0, 5),
    RefBoard("lap", "asc", "latest", 10, 15),
    RefBoard("gold", "desc", "total", -4, 3),  # spent: never below 0
    RefBoard("debt", "desc", "total", -3, 2, min_total=-4),
]
# ties on ended_at (the match_id decides), seconds shared by different instants, a day boundary
MOMENTS = ["2026-11-01T00:00:00+00:00", "2026-11-01T00:00:00.500+00:00", "2026-11-01T00:00:01+00:00",
           "2026-11-01T23:59:59+00:00", "2026-11-02T00:00:00+00:00"]  # fmt: skip
PLAYERS = ["a", "B", "c"]
MATCH_IDS = ["m0", "m1", "M1", "m10", "m2", "z"]  # byte order: M1 < m0 < m1 < m10 < m2 < z

result = st.sampled_from(BOARDS).flatmap(
    lambda b: st.fixed_dictionaries(
        {
            "player": st.sampled_from(PLAYERS),
            "board": st.just(b.slug),
            "score": st.one_of(
                *[st.integers(min_value=b.min_score, max_value=b.max_score)] * 9, st.just(b.max_score + 1)
            ),
        }
    )
)
operation = operations(matches(result, MATCH_IDS, MOMENTS))


def _one(match_id: str, at: str, score: int, board: str = "elo", player: str = "a") -> dict:
    return {"match_id": match_id, "ended_at": at, "results": [{"player": player, "board": board, "score": score}]}


@pytest.fixture
def world(transactional_db) -> Interleaving:
    return Interleaving("modes", BOARDS)


@settings(
    max_examples=examples(loop=25, deep=60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=1, max_size=16))
# a fall, then an older result arriving late (it must not win), then the latest voided: the
# value before it comes back
@example(
    ops=[
        ("one", _one("m0", MOMENTS[0], 5)),
        ("one", _one("m1", MOMENTS[2], 1)),
        ("project", 4),
        ("one", _one("m2", MOMENTS[1], 3)),
        ("project", 4),
        ("void", 1),
    ]
)
# a fall across two batches: ZADD GT would keep the old value
@example(ops=[("one", _one("m0", MOMENTS[0], 5)), ("project", 4), ("one", _one("m1", MOMENTS[2], 1)), ("project", 4)])
# a total spent to its floor, then an earlier gain arriving late: clamped in the order played
@example(
    ops=[
        ("one", _one("m1", MOMENTS[2], -4, "gold")),
        ("project", 4),
        ("one", _one("m0", MOMENTS[0], 3, "gold")),
        ("project", 4),
        ("one", _one("m2", MOMENTS[3], 1, "gold")),
    ]
)
# equal ended_at: the larger match_id byte order is the latest, in one batch and across two
@example(ops=[("one", _one("m1", MOMENTS[0], 4)), ("one", _one("M1", MOMENTS[0], 2)), ("project", 4)])
@example(ops=[("one", _one("M1", MOMENTS[0], 2)), ("project", 4), ("one", _one("m1", MOMENTS[0], 4)), ("rebuild", 0)])
def test_boards_that_fall_under_any_interleaving_match_the_reference(world: Interleaving, ops) -> None:
    ref = world.run(ops)
    values = {
        (pv.board.slug, pv.window, pv.player.external_id): (pv.value, pv.reached_at)
        for pv in PlayerValue.objects.select_related("board", "player")
    }
    assert values == {k: (v.value, v.reached_at) for k, v in ref.values.items()}
    assert_boards_match(world.game, ref)
    # the events feed replays to the same values, each change from the one before (tests/feed.py)
    assert feed_replay(feed_read(world.game.id, page=3)) == {k: v for k, (v, _) in values.items()}
