"""Attempts against tests/reference.py under any order of single and batched submissions
(docs/competitions.md, "Which results count"): each answer is the plain model's (results of a
request count in the order sent, per player per day), and the board's order is the
reference's over the counted results alone. Fixed dates: nothing depends on today's."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SignedClient, reset_results
from tests.factories import GameFactory, server_key, tournament_board
from tests.properties import examples
from tests.reference import RefBoard, Reference

# Property tests of what ingest decides in the request (docs/competitions.md): many examples in one
# test's database (reset_results restarts its ids), nothing read from the boards.
STARTS = datetime(2026, 11, 20, tzinfo=UTC)
ENDS = datetime(2026, 11, 22, tzinfo=UTC)
MAX_ATTEMPTS = 2

result = st.tuples(
    st.sampled_from(["ana", "bo", "cy"]),
    st.integers(-1, 2),  # the day: the one before, the tournament's two, the one after
    st.integers(0, 86_399),
    st.integers(0, 100),
)
operation = st.tuples(st.sampled_from(["one", "batch"]), st.lists(result, min_size=1, max_size=4))


@pytest.fixture
def cup(transactional_db) -> SignedClient:
    game = GameFactory(slug="arena")
    tournament_board(
        game,
        starts_at=STARTS,
        ends_at=ENDS,
        windows=("all", "daily"),
        board={"max_score": 100},
        max_attempts=MAX_ATTEMPTS,
    )
    key, secret = server_key(game)
    return SignedClient(key.key_id, secret)


@settings(
    max_examples=examples(loop=12, deep=25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=1, max_size=6))
def test_attempts_in_any_order_of_requests_match_the_reference(cup: SignedClient, ops) -> None:
    reset_results()
    ref = Reference(boards={"cup": RefBoard("cup", "desc", "best", 0, 100)}, tz="UTC", seasons=[])
    used: Counter[tuple[str, str]] = Counter()  # the rules' plain model
    n = 0

    def expect(match: dict) -> str | None:
        """The refusal the plain model gives the match (one result each), or None: counted."""
        at = datetime.fromisoformat(match["ended_at"])
        player = match["results"][0]["player"]
        if not STARTS <= at < ENDS:
            return "tournament_closed"
        if used[(player, at.date().isoformat())] >= MAX_ATTEMPTS:
            return "no_attempts_left"
        used[(player, at.date().isoformat())] += 1
        assert ref.submit(match) == 201
        return None

    for kind, results in ops:
        matches = []
        for player, day, second, score in results:
            n += 1
            at = STARTS + timedelta(days=day, seconds=second)
            matches.append(
                {
                    "match_id": f"m{n}",
                    "ended_at": at.isoformat().replace("+00:00", "Z"),
                    "results": [{"player": player, "board": "cup", "score": score}],
                }
            )
        if kind == "one":
            for m in matches:
                r = cup.post("/api/v1/games/arena/matches", m)
                code = expect(m)
                got = r.json()["error"]["code"] if r.status_code == 400 else None
                assert (r.status_code, got) == (400 if code else 201, code), r.content
        else:
            r = cup.post("/api/v1/games/arena/matches/batch", {"matches": matches})
            assert r.status_code == 200, r.content
            got = [(i["status"], (i.get("error") or {}).get("code")) for i in r.json()["results"]]
            assert got == [("rejected", c) if (c := expect(m)) else ("accepted", None) for m in matches]

    top = Client().get("/api/v1/games/arena/boards/cup/top?window=all&limit=100").json()["entries"]
    assert [(e["player"], e["score"]) for e in top] == [
        (p, ref.values[("cup", "all", p)].value) for p in ref.order("cup", "all")
    ]
