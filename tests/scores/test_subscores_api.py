"""Sub-scores over the API (docs/api.md §2.3, §4.1): results carry them, boards rank by them after
the score, and a result whose sub-scores the board does not take is a 400 naming the field, with
nothing stored (in a batch: that match rejected, the others stored)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

import pytest
from django.test import Client

from boards import live
from boards.histogram import histogram_build
from scores.models import Match, Result
from scores.selectors import cached_board
from seasons.services import windows_close
from tests.conftest import SignedClient, game_with_boards
from tests.polling import until
from tests.projector import projected
from tests.reference import RefBoard

pytestmark = pytest.mark.usefixtures("topology", "real_projector")

ARENA = RefBoard("arena", "desc", "best", 0, 100, subscores=(("kills", "desc", 0, 50), ("deaths", "asc", 0, 20)))
PLAIN = RefBoard("plain", "desc", "best", 0, 100)
URL = "/api/v1/games/subs/matches"


@pytest.fixture
def server(transactional_db) -> SignedClient:
    _, client = game_with_boards("subs", [(ARENA, "unique"), (PLAIN, "unique")])
    return client


def one(match_id: str, player: str, score: int, subscores: object = None, board: str = "arena") -> dict:
    result: dict = {"player": player, "board": board, "score": score}
    if subscores is not None:
        result["subscores"] = subscores
    return {"match_id": match_id, "ended_at": "2026-11-29T18:00:00Z", "results": [result]}


def top(server: SignedClient, board: str = "arena") -> list[dict]:
    response = server.get(f"/api/v1/games/subs/boards/{board}/top?limit=10")
    assert response.status_code == 200
    return response.json()["entries"]


def test_an_equal_score_is_ranked_by_the_subscores_in_declared_order(server: SignedClient) -> None:
    for i, (player, subs) in enumerate(
        [
            ("few-kills", {"kills": 3, "deaths": 0}),
            ("many-deaths", {"kills": 9, "deaths": 7}),
            ("best", {"kills": 9, "deaths": 2}),
            ("none-sent", None),  # missing: the worst kills and the worst deaths
        ]
    ):
        assert server.post(URL, one(f"m{i}", player, 40, subs)).status_code == 201
    assert server.post(URL, one("m9", "higher", 41, {"kills": 0, "deaths": 20})).status_code == 201
    projected()
    assert [e["player"] for e in top(server)] == ["higher", "best", "many-deaths", "few-kills", "none-sent"]
    assert [e["score"] for e in top(server)] == [41, 40, 40, 40, 40]


@pytest.mark.parametrize(
    ("subscores", "board", "status", "code", "field"),
    [
        ({"kills": 51}, "arena", 400, "score_out_of_bounds", "results[0].subscores.kills"),
        ({"deaths": -1}, "arena", 400, "score_out_of_bounds", "results[0].subscores.deaths"),
        ({"speed": 3}, "arena", 400, "invalid_match", "results[0].subscores.speed"),
        ({"kills": 1}, "plain", 400, "invalid_match", "results[0].subscores.kills"),
        ({"kills": "3"}, "arena", 400, "invalid_body", "subscores"),
        ({"kills": 2.0}, "arena", 400, "invalid_body", "subscores"),
        ({"kills": True}, "arena", 400, "invalid_body", "subscores"),
        ([3], "arena", 400, "invalid_body", "subscores"),
    ],
)
def test_subscores_the_board_does_not_take_are_400_naming_the_field_and_store_nothing(
    server: SignedClient, subscores: object, board: str, status: int, code: str, field: str
) -> None:
    response = server.post(URL, one("bad", "p", 10, subscores, board))
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert field in response.json()["error"]["message"]
    assert not Match.objects.exists() and not Result.objects.exists()


def test_a_batch_rejects_the_match_with_bad_subscores_and_stores_the_others(server: SignedClient) -> None:
    response = server.post(
        URL + "/batch", {"matches": [one("ok", "a", 10, {"kills": 5}), one("bad", "b", 10, {"kills": 99})]}
    )
    assert response.status_code == 200
    ok, bad = response.json()["results"]
    assert ok["status"] == "accepted"
    assert bad["status"] == "rejected" and bad["error"]["code"] == "score_out_of_bounds"
    assert "results[0].subscores.kills" in bad["error"]["message"]
    assert list(Match.objects.values_list("match_id", flat=True)) == ["ok"]


def test_the_same_match_with_other_subscores_is_a_conflict(server: SignedClient) -> None:
    assert server.post(URL, one("m", "a", 10, {"kills": 5})).status_code == 201
    assert server.post(URL, one("m", "a", 10, {"kills": 5})).status_code == 200
    assert server.post(URL, one("m", "a", 10, {"kills": 6})).status_code == 409
    assert server.post(URL, one("m", "a", 10)).status_code == 409


def test_every_read_carries_the_subscores_of_the_value(server: SignedClient) -> None:
    """Top, a player's standing and neighbours, friends, the websocket's top, frozen standings and
    the CSV export answer the sub-scores of each player's value (docs/api.md §2.3)."""
    assert server.post(URL, one("m1", "ana", 40, {"kills": 9})).status_code == 201
    assert server.post(URL, one("m2", "bo", 40, {"kills": 9, "deaths": 1})).status_code == 201
    assert server.post(URL, one("m3", "bo", 39, {"kills": 50, "deaths": 0})).status_code == 201  # worse: not kept
    assert server.request("PUT", "/api/v1/games/subs/players/ana/friends", {"friends": ["bo"]}).status_code == 200
    projected()
    want = {"bo": {"kills": 9, "deaths": 1}, "ana": {"kills": 9, "deaths": 20}}  # a missing one: its worst
    entries = top(server)
    assert [(e["player"], e["score"], e["subscores"]) for e in entries] == [(p, 40, s) for p, s in want.items()]
    me = server.get("/api/v1/games/subs/boards/arena/players/ana?around=1").json()
    assert me["subscores"] == want["ana"] and me["rank"] == 2
    assert [(e["player"], e["subscores"]) for e in me["around"]] == list(want.items())
    friends = server.get("/api/v1/games/subs/boards/arena/players/ana/friends").json()["entries"]
    assert [(e["player"], e["subscores"]) for e in friends] == list(want.items())
    text, _ = live.top_text(cached_board("subs", board_slug="arena"), "all")
    assert [(e["player"], e["subscores"]) for e in json.loads(text)["entries"]] == list(want.items())
    # a board without sub-scores answers no such key
    assert server.post(URL, one("m4", "ana", 5, board="plain")).status_code == 201
    projected()
    assert "subscores" not in top(server, "plain")[0]

    windows_close(now=datetime(2026, 11, 30, 0, 5, tzinfo=UTC))  # the day 2026-11-29 and its grace are over
    standings = Client().get("/api/v1/games/subs/boards/arena/standings/daily:2026-11-29")
    assert standings.status_code == 200
    assert [(e["player"], e["subscores"]) for e in standings.json()["entries"]] == list(want.items())
    export = server.get("/api/v1/games/subs/boards/arena/export?window=daily:2026-11-29")
    assert export.status_code == 200
    lines = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert [(r["player"], r["subscores.kills"], r["subscores.deaths"]) for r in lines] == [
        ("bo", "9", "1"),
        ("ana", "9", "20"),
    ]


def test_shared_ranks_are_shared_by_equal_score_and_subscores(transactional_db) -> None:
    _, server = game_with_boards("subs", [(ARENA, "shared")])
    for i, (player, subs) in enumerate([("a", {"kills": 5}), ("b", {"kills": 5}), ("c", {"kills": 4})]):
        assert server.post(URL, one(f"m{i}", player, 40, subs)).status_code == 201
    projected()
    assert [(e["player"], e["rank"]) for e in top(server)] == [("a", 1), ("b", 1), ("c", 3)]


@pytest.mark.parametrize("board", [ARENA, RefBoard("golf", "asc", "best", 0, 100, subscores=(("putts", "asc", 0, 9),))])
def test_the_histogram_buckets_by_score_never_splitting_one_over_two_buckets(transactional_db, board) -> None:
    _, server = game_with_boards("subs", [(board, "unique")])
    name = board.subscores[0][0]
    results = [{"player": f"p{i}", "board": board.slug, "score": 40, "subscores": {name: i}} for i in range(6)]
    results += [{"player": "q", "board": board.slug, "score": 41}, {"player": "r", "board": board.slug, "score": 7}]
    assert (
        server.post(URL, {"match_id": "h", "ended_at": "2026-11-29T18:00:00Z", "results": results}).status_code == 201
    )
    projected()
    top_url = f"/api/v1/games/subs/boards/{board.slug}/top"
    until(lambda: server.get(top_url).json()["total"] == 8, "all eight on the board", timeout=10)
    built = histogram_build(cached_board("subs", board_slug=board.slug), "all", buckets=8)
    buckets = [(b.min, b.max, b.count) for b in built.buckets]
    assert sum(c for _, _, c in buckets) == 8
    assert buckets == sorted(buckets) and all(
        a[1] < b[0] for a, b in zip(buckets, buckets[1:], strict=False)
    )  # no overlap
    # the six 40s all in one bucket (which may hold the neighbouring scores too, never part of them)
    lo, hi, count = next(b for b in buckets if b[0] <= 40 <= b[1])
    assert count == 6 + sum(1 for other in (7, 41) if lo <= other <= hi)
