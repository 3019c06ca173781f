"""docs/api.md §5, §6, §3.2 over the API: fields, statuses, authorization. What a client reads
after submissions is read on the path users run: the real projector process applies them
(tests/projector.py; `submit` waits until they are on the boards). The tests about parameters,
credentials and who may replace friend lists run on one Redis only and say so (one_redis)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client

from scores.models import Board
from tests.boards.conftest import URL, player_client, submit
from tests.conftest import SignedClient
from tests.factories import GameFactory, server_key
from tests.scores.test_ingest_api import assert_error

# one Redis, and the cluster with sharded boards; the projector after the topology it follows
pytestmark = pytest.mark.usefixtures("topology", "real_projector")
# Decided before any board is read: one Redis is enough (tests/conftest.py one_redis)
PARAMETERS = pytest.mark.one_redis("about refusing bad parameters and unknown names")
CREDENTIALS = pytest.mark.one_redis("about who may read what")
FRIEND_LISTS = pytest.mark.one_redis("about who may replace friend lists")
WINDOW_NAMES = pytest.mark.one_redis("about resolving a window's name")


def top(path: str = "/boards/rating/top", **params) -> dict:
    response = Client().get(URL + path, params)
    assert response.status_code == 200, response.content
    return response


def test_top_lists_the_board_in_board_order(ranked) -> None:
    response = top()
    assert response["Cache-Control"] == "public, max-age=1"
    body = response.json()
    assert body["game"] == "chess" and body["board"] == "rating" and body["window"] == "all" and body["total"] == 5
    assert [(e["rank"], e["player"], e["score"]) for e in body["entries"]] == [
        (1, "p1", 500),
        (2, "p3", 400),  # reached 400 first
        (3, "p2", 400),
        (4, "p4", 300),
        (5, "p5", 100),
    ]
    assert body["entries"][0]["display_name"] == "Ana"
    assert body["entries"][0]["metadata"] == {"replay": "r1"}
    assert body["entries"][1]["metadata"] is None


def test_top_paging_and_asc_boards(ranked) -> None:
    body = top(limit=2, offset=1).json()
    assert [e["player"] for e in body["entries"]] == ["p3", "p2"] and body["total"] == 5
    assert [e["rank"] for e in body["entries"]] == [2, 3]
    golf = top("/boards/golf/top").json()
    assert [(e["player"], e["score"]) for e in golf["entries"]] == [("p1", 70), ("p2", 72)]


def test_top_names_the_explicit_window(ranked) -> None:
    assert top(window="daily:2026-11-28").json()["window"] == "daily:2026-11-28"
    assert top(window="weekly:2026-W48").json()["total"] == 5
    assert top(window="season:s1").json()["window"] == "season:s1"
    assert top(window="daily:2026-11-27").json() == {
        "game": "chess",
        "board": "rating",
        "window": "daily:2026-11-27",
        "total": 0,
        "entries": [],
        "next_cursor": None,
    }


@pytest.mark.parametrize(
    "params, status, code",
    [
        ({"limit": 0}, 400, "invalid_body"),
        ({"limit": 101}, 400, "invalid_body"),
        ({"offset": -1}, 400, "invalid_body"),
        ({"offset": 10001}, 400, "invalid_body"),
        ({"limit": "ten"}, 400, "invalid_body"),
        ({"window": "yearly"}, 404, "unknown_window"),
        ({"window": "daily:2026-13-01"}, 404, "unknown_window"),
        ({"window": "season:nope"}, 404, "unknown_window"),
    ],
)
def test_top_bad_parameters(ranked, params, status, code) -> None:
    assert_error(Client().get(URL + "/boards/rating/top", params), status, code)


@PARAMETERS
def test_top_unknown_game_or_board_is_404(ranked) -> None:
    assert_error(Client().get("/api/v1/games/nope/boards/rating/top"), 404, "unknown_game")
    assert_error(Client().get(URL + "/boards/nope/top"), 404, "unknown_board")


def test_shared_ranks(server: SignedClient, game) -> None:
    Board.objects.filter(game=game, slug="rating").update(rank_display="shared")
    submit(
        server,
        "m1",
        [{"player": p, "board": "rating", "score": s} for p, s in [("a", 9), ("b", 7), ("c", 7), ("d", 5)]],
    )
    from scores.selectors import config_cache_clear

    config_cache_clear()
    assert [(e["rank"], e["player"]) for e in top().json()["entries"]] == [(1, "a"), (2, "b"), (2, "c"), (4, "d")]
    body = server.get(URL + "/boards/rating/players/c?around=1").json()
    assert body["rank"] == 2 and [e["rank"] for e in body["around"]] == [2, 2, 4]


# --- a player's standing ------------------------------------------------------------------


def test_player_standing_with_neighbours(ranked) -> None:
    body = ranked.get(URL + "/boards/rating/players/p2?around=1").json()
    assert body["player"] == "p2" and body["rank"] == 3 and body["score"] == 400 and body["total"] == 5
    assert body["window"] == "all"
    assert body["percentile"] == 80.0  # ahead of or level with 4 of 5
    assert [(e["rank"], e["player"]) for e in body["around"]] == [(2, "p3"), (3, "p2"), (4, "p4")]


def test_player_standing_edges(ranked) -> None:
    body = ranked.get(URL + "/boards/rating/players/p1?around=2").json()
    assert body["rank"] == 1 and body["percentile"] == 100.0
    assert [e["player"] for e in body["around"]] == ["p1", "p3", "p2"]
    last = ranked.get(URL + "/boards/rating/players/p5?around=0").json()
    assert last["rank"] == 5 and last["percentile"] == 20.0 and [e["player"] for e in last["around"]] == ["p5"]


def test_known_player_without_a_score_in_the_window(ranked) -> None:
    body = ranked.get(URL + "/boards/rating/players/p1?window=daily:2026-11-27").json()
    assert body["rank"] is None and body["score"] is None and body["around"] == [] and body["total"] == 0
    body = ranked.get(URL + "/boards/golf/players/p5").json()
    assert body["rank"] is None and body["score"] is None and body["around"] == []


@PARAMETERS
def test_unknown_player_is_404(ranked) -> None:
    assert_error(ranked.get(URL + "/boards/rating/players/nobody"), 404, "unknown_player")


@pytest.mark.parametrize("around", ["-1", "51", "x"])
def test_bad_around_is_400(ranked, around) -> None:
    assert_error(ranked.get(URL + f"/boards/rating/players/p1?around={around}"), 400, "invalid_body")


# --- authorization ----------------------------------------------------------------------------


@CREDENTIALS
def test_player_reads_needs_credentials(ranked) -> None:
    assert_error(Client().get(URL + "/boards/rating/players/p1"), 401, "not_authenticated")
    assert_error(
        Client(headers={"Authorization": "Bearer forged"}).get(URL + "/boards/rating/players/p1"),
        401,
        "authentication_failed",
    )


@CREDENTIALS
def test_a_player_reads_themselves_and_friends_but_not_strangers(ranked) -> None:
    response = ranked.request("PUT", URL + "/players/p1/friends", {"friends": ["p2"]})
    assert response.status_code == 200 and response.json() == {"friends": ["p2"]}
    p1 = player_client("p1")
    assert p1.get(URL + "/boards/rating/players/p1").status_code == 200
    assert p1.get(URL + "/boards/rating/players/p2").status_code == 200  # a friend
    assert player_client("p2").get(URL + "/boards/rating/players/p1").status_code == 200  # mutual
    assert_error(p1.get(URL + "/boards/rating/players/p3"), 403)  # not a friend


@CREDENTIALS
def test_token_of_another_game_and_key_of_another_game_are_403(ranked) -> None:
    other = GameFactory(slug="go")
    key, secret = server_key(other)
    assert_error(SignedClient(key.key_id, secret).get(URL + "/boards/rating/players/p1"), 403, "forbidden")
    from scores.models import Player
    from scores.services import player_token_issue

    stranger = Player.objects.create(game=other, external_id="p1")
    token, _ = player_token_issue(player=stranger)
    assert_error(
        Client(headers={"Authorization": f"Bearer {token}"}).get(URL + "/boards/rating/players/p1"), 403, "forbidden"
    )


@CREDENTIALS
def test_staff_session_reads_anyone(ranked) -> None:
    User.objects.create_user("mod", password="pw", is_staff=True)
    User.objects.create_user("joe", password="pw")
    staff, joe = Client(), Client()
    staff.login(username="mod", password="pw")
    joe.login(username="joe", password="pw")
    assert staff.get(URL + "/boards/rating/players/p3").status_code == 200
    assert_error(joe.get(URL + "/boards/rating/players/p3"), 403, "forbidden")


@CREDENTIALS
def test_token_endpoint(ranked) -> None:
    response = ranked.post(URL + "/players/p1/token")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"token", "expires_at"}
    assert datetime.fromisoformat(body["expires_at"]) > datetime.now(UTC)
    client = Client(headers={"Authorization": f"Bearer {body['token']}"})
    assert client.get(URL + "/boards/rating/players/p1").json()["rank"] == 1
    assert_error(ranked.post(URL + "/players/nobody/token"), 404, "unknown_player")
    assert_error(Client().post(URL + "/players/p1/token"), 401, "not_authenticated")


@CREDENTIALS
def test_expired_token_is_401(ranked) -> None:
    from scores.auth import make_player_token
    from scores.models import Player

    p1 = Player.objects.get(external_id="p1")
    token = make_player_token(p1.game_id, p1.pk, datetime(2026, 1, 1, tzinfo=UTC))
    assert_error(
        Client(headers={"Authorization": f"Bearer {token}"}).get(URL + "/boards/rating/players/p1"),
        401,
        "authentication_failed",
    )


# --- friends ----------------------------------------------------------------------------------


def test_friends_board(ranked) -> None:
    ranked.request("PUT", URL + "/players/p2/friends", {"friends": ["p5", "p1", "newbie"]})
    body = player_client("p2").get(URL + "/boards/rating/players/p2/friends").json()
    assert body["window"] == "all"
    assert [(e["rank"], e["board_rank"], e["player"], e["score"]) for e in body["entries"]] == [
        (1, 1, "p1", 500),
        (2, 3, "p2", 400),
        (3, 5, "p5", 100),
    ]
    assert body["entries"][0]["display_name"] == "Ana"


def test_friend_list_replacement_is_mutual(ranked) -> None:
    ranked.request("PUT", URL + "/players/p1/friends", {"friends": ["p2", "p3"]})
    ranked.request("PUT", URL + "/players/p1/friends", {"friends": ["p3"]})
    p2 = player_client("p2").get(URL + "/boards/rating/players/p2/friends").json()
    assert [e["player"] for e in p2["entries"]] == ["p2"]
    p3 = player_client("p3").get(URL + "/boards/rating/players/p3/friends").json()
    assert [e["player"] for e in p3["entries"]] == ["p1", "p3"]
    assert_error(player_client("p2").get(URL + "/boards/rating/players/p1"), 403, "forbidden")


@pytest.mark.parametrize(
    "body",
    [{"friends": ["p1"]}, {"friends": ["bad id"]}, {"friends": "p2"}, {}, {"friends": [f"f{i}" for i in range(1001)]}],
)
def test_bad_friend_lists_are_400(ranked, body) -> None:
    from scores.models import Friendship

    assert_error(ranked.request("PUT", URL + "/players/p1/friends", body), 400, "invalid_body")
    assert not Friendship.objects.exists()


@FRIEND_LISTS
def test_friends_put_needs_a_server_key(ranked) -> None:
    assert_error(
        player_client("p1").put(URL + "/players/p1/friends", {"friends": []}, content_type="application/json"), 401
    )


def test_friends_board_with_a_thousand_friends(server: SignedClient, game) -> None:
    friends = [f"f{i:04d}" for i in range(1000)]
    batch = [
        {
            "match_id": f"m{i}",
            "ended_at": "2026-11-28T12:00:00Z",
            "results": [{"player": f, "board": "rating", "score": i % 37}],
        }
        for i, f in enumerate(friends)
    ]
    assert server.post(URL + "/matches/batch", {"matches": batch}).status_code == 200
    submit(server, "me", [{"player": "me", "board": "rating", "score": 20}])
    assert server.request("PUT", URL + "/players/me/friends", {"friends": friends}).status_code == 200
    body = player_client("me").get(URL + "/boards/rating/players/me/friends").json()
    assert len(body["entries"]) == 1001
    assert [e["rank"] for e in body["entries"]] == list(range(1, 1002))
    assert [e["board_rank"] for e in body["entries"]] == list(range(1, 1002))  # everyone on the board is here
    scores = [e["score"] for e in body["entries"]]
    assert scores == sorted(scores, reverse=True)


@WINDOW_NAMES
def test_current_season_window_resolves_to_the_running_season(ranked, game) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import SeasonFactory

    now = timezone.now()
    SeasonFactory(game=game, slug="now", starts_at=now - timedelta(days=1), ends_at=now + timedelta(days=1))
    assert top(window="season").json()["window"] == "season:now"
