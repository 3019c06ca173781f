"""Property: after random submissions, /top, a player's standing (rank, percentile,
around) and the friends board equal the plain-Python reference model, on desc and asc,
best and total, unique and shared boards, across windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import game_with_boards, reset_results
from tests.factories import SeasonFactory
from tests.properties import examples
from tests.reference import RefBoard, Reference, RefSeason

pytestmark = pytest.mark.usefixtures("topology")  # one Redis, and the cluster with sharded boards

BOARDS = {
    "high": (RefBoard("high", "desc", "best", 0, 5), "unique"),
    "low": (RefBoard("low", "asc", "best", 10, 15), "shared"),
    "sum": (RefBoard("sum", "desc", "total", 0, 3), "shared"),
}
SEASON = RefSeason("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC))
MOMENTS = [
    datetime(2026, 11, 22, 23, 59, 58, tzinfo=UTC) + timedelta(milliseconds=ms) for ms in (0, 500, 1000, 2000, 2600)
]
PLAYERS = ["a", "b", "B", "a1", "_", "Z9", "c.d", "e@f"]
WINDOWS = ["all", "daily:2026-11-22", "daily:2026-11-23", "weekly:2026-W47", "weekly:2026-W48", "season:s1"]

match = st.fixed_dictionaries(
    {
        "ended_at": st.sampled_from(MOMENTS).map(lambda d: d.isoformat()),
        "results": st.lists(
            st.tuples(st.sampled_from(PLAYERS), st.sampled_from(list(BOARDS)), st.integers(0, 5)),
            min_size=1,
            max_size=5,
        ),
    }
)


@pytest.fixture
def world(transactional_db):
    game, server = game_with_boards("prop", BOARDS.values())
    SeasonFactory(game=game, slug="s1", starts_at=SEASON.starts_at, ends_at=SEASON.ends_at)
    return game, server


@settings(
    max_examples=examples(loop=15, deep=40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    matches=st.lists(match, min_size=1, max_size=8),
    friendships=st.lists(st.tuples(st.sampled_from(PLAYERS), st.sampled_from(PLAYERS)), max_size=8),
    around=st.integers(0, 3),
    page=st.tuples(st.integers(0, 6), st.integers(1, 5)),
)
def test_reads_match_reference_model(world, matches, friendships, around, page) -> None:
    game, server = world
    reset_results()
    ref = Reference({slug: b for slug, (b, _) in BOARDS.items()}, "UTC", [SEASON])
    for i, m in enumerate(matches):
        body = {
            "match_id": f"m{i}",
            "ended_at": m["ended_at"],
            "results": [{"player": p, "board": b, "score": s + BOARDS[b][0].min_score} for p, b, s in m["results"]],
        }
        assert server.post("/api/v1/games/prop/matches", body).status_code == ref.submit(body)

    # mutual friend lists, as the model sees them
    friends: dict[str, set[str]] = {p: set() for p in PLAYERS}
    for a, b in friendships:
        if a != b:
            friends[a].add(b)
            friends[b].add(a)
    for p in PLAYERS:
        if friends[p]:
            assert (
                server.request(
                    "PUT", f"/api/v1/games/prop/players/{p}/friends", {"friends": sorted(friends[p])}
                ).status_code
                == 200
            )

    offset, limit = page
    for slug, (_board, display) in BOARDS.items():
        shared = display == "shared"
        for window in WINDOWS:
            ranks = ref.ranks(slug, window, shared)
            got = (
                Client()
                .get(f"/api/v1/games/prop/boards/{slug}/top", {"window": window, "offset": offset, "limit": limit})
                .json()
            )
            assert got["total"] == len(ranks)
            assert [(e["rank"], e["player"], e["score"]) for e in got["entries"]] == ranks[offset : offset + limit]
            for player in {p for _, p, _ in ranks} | {"a"}:
                if not any(r[2] == player for r in ref.values):
                    continue
                want = ref.standing(slug, window, player, around, shared)
                body = server.get(
                    f"/api/v1/games/prop/boards/{slug}/players/{player}?window={window}&around={around}"
                ).json()
                assert {k: body[k] for k in ("rank", "score", "total", "percentile")} == {
                    k: want[k] for k in ("rank", "score", "total", "percentile")
                }
                assert [(e["rank"], e["player"], e["score"]) for e in body["around"]] == want["around"]
                assert body["rank_exact"] is True  # within exact_rank_limit, sharded or not
                fb = server.get(f"/api/v1/games/prop/boards/{slug}/players/{player}/friends?window={window}").json()
                assert [
                    (e["rank"], e["board_rank"], e["player"], e["score"]) for e in fb["entries"]
                ] == ref.friends_board(slug, window, player, friends[player], shared)
