"""Deep paging by cursor (docs/api.md §5.3; docs/reads.md, "Deep paging"), on one Redis and on the
local Redis Cluster with boards of 4 shards: walking a board page by page while other players'
values change (up and down: a latest board) yields every player whose value did not change
exactly once, in the board's order, and each page is exactly what follows the cursor's
position in the reference model's order at the moment it is read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boards.cursor import cursor_decode
from tests.conftest import game_with_boards, reset_results
from tests.properties import examples
from tests.reference import RefBoard, Reference

pytestmark = pytest.mark.usefixtures("topology")

BOARDS = [RefBoard("elo", "desc", "latest", 0, 6), RefBoard("hi", "asc", "best", 0, 6)]
START = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
URL = "/api/v1/games/walk/boards"


@pytest.fixture
def world(transactional_db):
    _, server = game_with_boards("walk", [(BOARDS[0], "unique"), (BOARDS[1], "shared")])
    return server


def _key(ref: Reference, board: str, player: str) -> tuple:
    v = ref.values[(board, "all", player)]
    sign = -1 if ref.boards[board].order == "desc" else 1
    return (sign * v.value, int(v.reached_at.timestamp()), player.encode())


def _submit(server, ref: Reference, n: int, at: datetime, scores: dict[str, int], board: str) -> None:
    body = {
        "match_id": f"m{n}",
        "ended_at": at.isoformat(),
        "results": [{"player": p, "board": board, "score": s} for p, s in sorted(scores.items())],
    }
    assert server.post("/api/v1/games/walk/matches", body).status_code == ref.submit(body) == 201


names = st.from_regex(r"[a-zA-Z0-9_]{1,3}", fullmatch=True)


@settings(
    max_examples=examples(loop=12, deep=25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    board=st.sampled_from(["elo", "hi"]),
    first=st.dictionaries(names, st.integers(0, 6), min_size=1, max_size=30),
    tied=st.dictionaries(names, st.integers(0, 6), max_size=10),  # the same second as some of first
    limit=st.integers(1, 7),
    writes=st.lists(st.dictionaries(names, st.integers(0, 6), min_size=1, max_size=4), max_size=8),
)
def test_walking_by_cursor_lists_every_unchanged_player_once_in_order(world, board, first, tied, limit, writes) -> None:
    server = world
    reset_results()
    client = Client()
    ref = Reference({b.slug: b for b in BOARDS}, "UTC", [])
    _submit(server, ref, 0, START, first, board)
    if tied:
        _submit(server, ref, 1, START + timedelta(milliseconds=300), tied, board)
    changed: set[str] = set()
    seen: list[str] = []
    url = f"{URL}/{board}/top?limit={limit}"
    body = client.get(url).json()
    pages = 0
    last_key = None
    while True:
        pages += 1
        order = sorted((p for b, w, p in ref.values if b == board and w == "all"), key=lambda p: _key(ref, board, p))
        expected = [p for p in order if last_key is None or _key(ref, board, p) > last_key][:limit]
        assert [e["player"] for e in body["entries"]] == expected
        assert body["total"] == len(order)
        if board == "elo":  # unique ranks: the position now
            assert [e["rank"] for e in body["entries"]] == [order.index(p) + 1 for p in expected]
        else:  # shared ranks: players with a strictly better value, plus one
            for e in body["entries"]:
                mine = ref.values[(board, "all", e["player"])].value
                assert e["rank"] == 1 + sum(1 for p in order if ref.values[(board, "all", p)].value < mine)
        seen += expected
        if expected:
            last = expected[-1]
            last_key = _key(ref, board, last)
            if body["next_cursor"]:
                assert cursor_decode(body["next_cursor"])[1] == last
        if body["next_cursor"] is None:
            assert not expected or order.index(expected[-1]) == len(order) - 1
            break
        if writes:  # others are written while we walk
            scores = writes.pop(0)
            changed |= set(scores)
            _submit(server, ref, 10 + pages, START + timedelta(seconds=pages), scores, board)
        body = client.get(f"{URL}/{board}/top?limit={limit}&cursor={body['next_cursor']}").json()
    final = sorted((p for b, w, p in ref.values if b == board and w == "all"), key=lambda p: _key(ref, board, p))
    unchanged = [p for p in final if p not in changed]
    assert [p for p in seen if p not in changed] == unchanged


def test_a_cursor_from_elsewhere_is_refused(world) -> None:
    client = Client()
    # the old base64 form, a bare number, a leading zero, 2**53, no player, a player outside docs/api.md §1.1,
    # upper-case hex, a newline after it
    for bad in ["x", "0", "djE6MTI6YQ", "00.a", "20000000000000.a", "c.", "c.a%20b", "C.a", "c.a%0A"]:
        response = client.get(f"{URL}/elo/top?cursor={bad}")
        assert response.status_code == 400, bad
        assert response.json()["error"]["code"] == "invalid_cursor"
    response = client.get(f"{URL}/elo/top?cursor=c.a&offset=5")
    assert response.status_code == 400 and "offset" in response.json()["error"]["message"]
    for edge in ("0.a", "1fffffffffffff.p:1@x", "c.a.b"):  # a valid position on an empty board
        body = client.get(f"{URL}/elo/top?cursor={edge}").json()
        assert body["entries"] == [] and body["next_cursor"] is None, edge
