"""The thin path of a player's own rank and friends reads (boards/api/thin.py, docs/reads.md
"The thin path") answers byte for byte what the DRF views answer, and what DRF's own JSON
renderer writes, on one Redis and on the local cluster (where the DRF views answer both)."""

from __future__ import annotations

import json

import pytest
from django.test import Client, RequestFactory, override_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer

from boards.api import thin
from boards.api.common import _stdlib_json_bytes, json_bytes
from rediskit.client import get_redis
from scores.models import Board, Player
from scores.selectors import config_cache_clear
from scores.services import player_token_issue
from tests.boards.conftest import URL, player_client, submit
from tests.conftest import SignedClient

pytestmark = pytest.mark.usefixtures("topology")  # one Redis, and the cluster with sharded boards

ODD_METADATA = {
    "line": "a\u2028b\u2029c",
    "accents": "Zoë, Łódź, 東京",
    "small": 1e-05,
    "tiny": 1.5e-07,
    "big": 1e16,
    "half": 0.5,
    "huge": 123456789012345678901234567890,
    "nested": [{"k": None, "t": True}],
}


@pytest.fixture
def social(ranked: SignedClient) -> SignedClient:
    """The ranked board, odd metadata on p4, friends for p1 and p2, and a shared total board."""
    submit(ranked, "m-odd", [{"player": "p4", "board": "rating", "score": 350, "metadata": ODD_METADATA}])
    submit(
        ranked,
        "m-pts",
        [{"player": p, "board": "points", "score": s} for p, s in (("p1", 5), ("p2", 5), ("p3", 7), ("p4", 1))],
    )
    Board.objects.filter(slug="points").update(rank_display="shared")
    config_cache_clear()
    for owner, friends in (("p1", ["p2", "p3", "p4", "nobody"]), ("p2", ["p5", "p1"])):
        assert ranked.request("PUT", f"{URL}/players/{owner}/friends", {"friends": friends}).status_code == 200
    return ranked


READS = [
    "/boards/rating/players/{p}",
    "/boards/rating/players/{p}?around=0",
    "/boards/rating/players/{p}?around=5&window=all",
    "/boards/rating/players/{p}?around=50",
    "/boards/rating/players/{p}?window=daily:2026-11-28",
    "/boards/rating/players/{p}?window=daily:2026-11-27",  # no score that day
    "/boards/rating/players/{p}?unknown=1",
    "/boards/golf/players/{p}?around=1",
    "/boards/points/players/{p}?around=3",
    "/boards/rating/players/{p}/friends",
    "/boards/rating/players/{p}/friends?window=season:s1",
    "/boards/points/players/{p}/friends",
    "/boards/golf/players/{p}/friends",
    # what the thin path hands to the DRF view: errors and unusual queries
    "/boards/rating/players/{p}?around=51",
    "/boards/rating/players/{p}?around=",
    "/boards/rating/players/{p}?window=nope",
    "/boards/nope/players/{p}",
    "/boards/rating/players/{p}?around=1&around=2",
]


def answers(client: Client, path: str) -> tuple[int, bytes, dict[str, str | None]]:
    response = client.get(URL + path)
    headers = {h: response.get(h) for h in ("Content-Type", "Allow", "Cache-Control", "Vary")}
    return response.status_code, response.content, headers


def test_the_thin_path_answers_what_the_drf_views_answer(social, topology) -> None:
    for player in ("p1", "p2", "p4", "p5"):
        client = player_client(player)
        for read in READS:
            path = read.format(p=player)
            thin_answer = answers(client, path)
            with override_settings(BOARDS_THIN_READS=False):
                drf_answer = answers(client, path)
            assert thin_answer == drf_answer, path
            status, body, _ = thin_answer
            # and what DRF's renderer writes for that body, byte for byte
            assert body == JSONRenderer().render(json.loads(body)), path
            if status == 200 and "/rating/players/p4" in path and "window=daily:2026-11-27" not in path:
                assert b"\\u2028" in body and b"1e-05" in body  # the odd metadata went through


def test_other_players_and_signed_reads_go_to_the_drf_view(social, topology) -> None:
    """A friend's read, a server's read and a stranger's are answered by the DRF view
    (authorization, 403): the thin path declines them."""
    factory = RequestFactory()
    p2_token, _ = player_token_issue(player=Player.objects.get(external_id="p2"))
    own = factory.get(URL + "/boards/rating/players/p2", HTTP_AUTHORIZATION=f"Bearer {p2_token}")
    friend = factory.get(URL + "/boards/rating/players/p1", HTTP_AUTHORIZATION=f"Bearer {p2_token}")
    args = {"game": "chess", "board": "rating"}
    taken = thin.standing(own, player="p2", **args)
    assert (taken is not None) == (topology == "one")  # a sharded board's read fans out: DRF's
    own_friends = factory.get(URL + "/boards/rating/players/p2/friends", HTTP_AUTHORIZATION=f"Bearer {p2_token}")
    assert (thin.friends(own_friends, player="p2", **args) is not None) == (topology == "one")
    assert thin.standing(friend, player="p1", **args) is None
    assert thin.friends(friend, player="p1", **args) is None
    for player, client in (("p1", player_client("p2")), ("p5", player_client("p1")), ("p3", social.client)):
        for read in ("/boards/rating/players/{p}", "/boards/rating/players/{p}/friends"):
            path = read.format(p=player)
            signed = client is social.client
            thin_answer = social.get(URL + path) if signed else client.get(URL + path)
            with override_settings(BOARDS_THIN_READS=False):
                drf_answer = social.get(URL + path) if signed else client.get(URL + path)
            assert (thin_answer.status_code, thin_answer.content) == (drf_answer.status_code, drf_answer.content)


@pytest.mark.parametrize("read", ["/boards/rating/players/p1", "/boards/rating/players/p1/friends"])
def test_a_throttled_own_read_is_the_same_429(social, settings, read) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"player_reads": "2/min", "address_reads": "1000/min"},
    }
    client = player_client("p1")
    seen = []
    for thin_reads in (True, False):
        with override_settings(BOARDS_THIN_READS=thin_reads):
            for key in get_redis().scan_iter("lb:throttle:*"):
                get_redis().delete(key)
            statuses = [client.get(URL + read) for _ in range(3)]
        assert [r.status_code for r in statuses] == [200, 200, 429]
        refused = statuses[-1]
        assert int(refused["Retry-After"]) >= 1
        seen.append((refused.content, refused["Content-Type"], refused["Allow"]))
    assert seen[0] == seen[1]
    assert json.loads(seen[0][0])["error"]["code"] == "rate_limited"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_json_bytes_writes_what_drf_writes(value) -> None:
    body = {"metadata": value, "percentile": 99.99}
    try:
        expected = _stdlib_json_bytes(body)
    except (UnicodeEncodeError, ValueError):  # lone surrogates: DRF fails on them too
        return
    assert json_bytes(body) == expected == JSONRenderer().render(body)


def test_the_openapi_schema_is_the_drf_views_schema() -> None:
    """The URLs serve the wrapped view functions; the schema generated from them is the one
    generated from DRF's own view functions."""
    from django.urls import include, path
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework.views import APIView

    from boards.api import FriendsBoardApi, PlayerStandingApi
    from leaderboard_project import urls

    assert PlayerStandingApi.as_view().cls is PlayerStandingApi

    def plain(view_class):
        return APIView.as_view.__func__(view_class)

    board = urls.BOARD
    drf_patterns = [
        path(board + "players/<str:player>", plain(PlayerStandingApi), name="boards-player"),
        path(board + "players/<str:player>/friends", plain(FriendsBoardApi), name="boards-friends"),
    ]
    wrapped_patterns = [p for p in include("boards.urls")[0].urlpatterns if "players" in str(p.pattern)]
    wrapped_patterns = [path(board + str(p.pattern), p.callback, name=p.name) for p in wrapped_patterns]

    def schema(patterns):
        return json.dumps(SchemaGenerator(patterns=patterns).get_schema(request=None, public=True), sort_keys=True)

    assert schema(wrapped_patterns) == schema(drf_patterns)
    assert '"boards_player"' in schema(drf_patterns) and '"boards_friends"' in schema(drf_patterns)
