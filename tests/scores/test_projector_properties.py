"""Property: any interleaving of submissions (retries, duplicates, conflicts, batches),
projector batches of any size, batches that crash before their commit, batches whose process
dies between the commit and the Redis write, and voids racing all of them, ends (once the
projector and the periodic heal have run) with Postgres and Redis holding exactly what the
plain-Python reference model holds for the matches still counting: on one Redis, and on the
local Redis Cluster with boards of 4 shards; and the events feed, read in pages of any size,
telling every change once, in an order that replays to exactly those values. The driver is
tests/interleavings.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scores.models import Match, PlayerValue
from tests.feed import feed_arrivals, feed_read, feed_replay
from tests.interleavings import Interleaving, assert_boards_match, matches, operations
from tests.properties import examples
from tests.reference import RefBoard

pytestmark = [
    pytest.mark.usefixtures("topology"),  # one Redis, and the cluster with sharded boards
    pytest.mark.without_projector("the interleaving drives the projector batch by batch"),
]

BOARDS = [
    RefBoard("high", "desc", "best", 0, 3),
    RefBoard("low", "asc", "best", 10, 13),
    RefBoard("sum", "desc", "total", 0, 3),
]
MOMENTS = ["2026-10-31T23:59:59+00:00", "2026-11-01T00:00:00+00:00", "2026-11-01T00:00:00.500+00:00",
           "2026-11-22T23:59:59+00:00", "2026-11-23T00:00:01+00:00"]  # fmt: skip
PLAYERS = ["a", "B"]  # few: results of one player meet in batches, voids and pending rows

# mostly within the board's bounds (a match with one result out of them is refused whole)
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
# the boards here never fall: rebuilds are the business of the other two property tests
operation = operations(matches(result, [f"m{i}" for i in range(5)], MOMENTS), rebuild=False)


def _one(match_id: str, board: str, score: int, player: str = "a") -> dict:
    return {
        "match_id": match_id,
        "ended_at": MOMENTS[0],
        "results": [{"player": player, "board": board, "score": score}],
    }


@pytest.fixture
def world(transactional_db) -> Interleaving:
    return Interleaving("prop", BOARDS)


@settings(
    max_examples=examples(loop=50, deep=120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=1, max_size=16), page=st.integers(min_value=1, max_value=7))
# a void of an applied match while the same player's next result is still pending (a total:
# counting the pending one in the recompute and again when the projector applies it doubles it)
@example(ops=[("one", _one("m0", "sum", 3)), ("project", 4), ("one", _one("m1", "sum", 2)), ("void", 0)], page=1)
# a crash, then a batch that never reached Redis, then a void racing the rest
@example(
    ops=[
        ("batch", [_one("m0", "sum", 1), _one("m1", "high", 2)]),
        ("crash", 1),
        ("lost_redis", 1),
        ("one", _one("m2", "sum", 3)),
        ("void", 1),
        ("project", 1),
    ],
    page=2,
)
# a batch repeating a stored id twice, first with another body: the second is still a duplicate
@example(ops=[("one", _one("m0", "high", 0)), ("batch", [_one("m0", "high", 1), _one("m0", "high", 0)])], page=3)
def test_any_interleaving_with_crashes_and_voids_matches_the_reference(world: Interleaving, ops, page: int) -> None:
    ref = world.run(ops)
    values = {
        (pv.board.slug, pv.window, pv.player.external_id): pv.value
        for pv in PlayerValue.objects.select_related("board", "player")
    }
    assert values == {k: v.value for k, v in ref.values.items()}
    assert_boards_match(world.game, ref)
    feed = feed_read(world.game.id, page=page)
    assert feed_replay(feed) == values
    arrivals = feed_arrivals(feed)
    assert max(arrivals.values(), default=1) == 1, arrivals
    # every match that counts was told of (accepted on arrival: a void that came before the
    # projector did is told of by itself alone)
    counting = set(Match.objects.filter(game=world.game, status="accepted").values_list("match_id", flat=True))
    assert counting <= set(arrivals), (counting, arrivals)
