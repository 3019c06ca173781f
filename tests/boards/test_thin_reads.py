"""The thin path of a player's own rank and friends reads (boards/api/thin.py, docs/reads.md
"The thin path") answers byte for byte what the DRF views answer, and what DRF's own JSON
renderer writes, on one Redis and on the local cluster (where the DRF views answer both)."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.test import Client, RequestFactory, override_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer

from boards.api import thin
from boards.api.common import _stdlib_json_bytes, json_bytes
from boards.api.top import cache_period, thin_top
from boards.profiles import local_caches_clear
from leaderboard_project.proxies import trusted_proxies_parse
from rediskit.client import get_redis
from scores.models import Board, Player
from scores.selectors import config_cache_clear
from scores.services import player_token_issue
from tests.boards.conftest import URL, player_client, submit
from tests.boards.test_reads_operational import throttle_rates
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


TOP_READS = [
    "/boards/rating/top",
    "/boards/rating/top?limit=2",
    "/boards/rating/top?limit=2&offset=1&window=all",
    "/boards/golf/top?window=daily:2026-11-28",
    "/boards/points/top?limit=100",
    "/boards/rating/top?window=daily:2026-11-27",  # an empty window
    "/boards/rating/top?unknown=1",
]


def top_answers(client: Client, path: str) -> tuple[int, bytes, dict[str, str | None]]:
    response = client.get(URL + path)
    headers = {h: response.get(h) for h in ("Content-Type", "Allow", "Cache-Control", "Vary", "X-Accel-Expires")}
    return response.status_code, response.content, headers


def test_a_top_page_this_process_holds_is_what_the_drf_view_answers(social, topology) -> None:
    """A page computed in this second is answered by boards/api/top.py's thin_top: the same
    status, bytes and headers as DRF's view, which answers it from the same cache."""
    client = Client()
    factory = RequestFactory()
    for path in TOP_READS:
        deadline = time.monotonic() + 10
        while True:  # both reads within one cache period (TOP_CACHE_SECONDS), so both answer one page
            period = cache_period(time.time())
            with override_settings(BOARDS_THIN_READS=False):
                drf_answer = top_answers(client, path)
            taken = thin_top(factory.get(URL + path), game="chess", board=path.split("/")[2])
            thin_answer = top_answers(client, path)
            if cache_period(time.time()) == period or time.monotonic() > deadline:
                break
        assert drf_answer[0] == 200, path
        assert taken is not None, path
        assert thin_answer == drf_answer, path
        assert json.loads(thin_answer[1])["entries"] is not None
    # a cursor, an odd query or an unknown board is declined: DRF answers those
    for path in ("/boards/rating/top?cursor=abc", "/boards/rating/top?limit=0", "/boards/nope/top"):
        assert thin_top(factory.get(URL + path), game="chess", board=path.split("/")[2].split("?")[0]) is None


FRIENDS_READS = [r for r in READS if r.endswith("/friends") or "/friends?" in r]


def test_a_friends_read_answers_the_same_whatever_its_caches_hold(social, topology) -> None:
    """friends.lua reads the cached friend list and profiles in the board read's round trip
    (docs/reads.md, "One round trip per read"): with both caches warm, with this process's
    profiles forgotten (the script's copies are used), and with the friend list and every shared
    profile gone too (the list reloaded from Postgres), a read gives the same bytes, by either
    path."""

    def cold_shared() -> None:
        local_caches_clear()
        for pattern in ("fl:*", "pv:*"):
            for key in get_redis().scan_iter(pattern):
                get_redis().delete(key)

    for player in ("p1", "p2", "p5"):
        client = player_client(player)
        for read in FRIENDS_READS:
            path = read.format(p=player)
            for thin_reads in (True, False):
                with override_settings(BOARDS_THIN_READS=thin_reads):
                    seen = []
                    for forget in (cold_shared, lambda: None, local_caches_clear):
                        forget()
                        seen.append(answers(client, path))
                assert seen[0][0] == 200, path
                assert seen[0] == seen[1] == seen[2], path
    # the list reloaded after a change is the new one
    assert social.request("PUT", f"{URL}/players/p1/friends", {"friends": ["p5"]}).status_code == 200
    body = json.loads(player_client("p1").get(URL + "/boards/rating/players/p1/friends").content)
    assert sorted(e["player"] for e in body["entries"]) == ["p1", "p5"]


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
        # The message counts the seconds left ("available in 46 seconds"), which may tick
        # between the two rounds: compare it with the number taken out.
        body = re.sub(rb"[0-9]+ seconds", b"N seconds", refused.content)
        seen.append((body, refused["Content-Type"], refused["Allow"]))
    assert seen[0] == seen[1]
    assert json.loads(seen[0][0])["error"]["code"] == "rate_limited"


@pytest.mark.parametrize("read", ["/boards/rating/players/p1", "/boards/rating/players/p1/friends"])
def test_the_address_limit_counts_the_forwarded_client_on_both_paths(social, settings, monkeypatch, read) -> None:
    """Behind a trusted proxy the address limit counts the client it forwarded
    (leaderboard_project/proxies.py): two clients behind the same balancer do not share a
    counter, and what a client writes left of the balancer's entry changes nothing."""
    throttle_rates(monkeypatch, player_reads="1000/min", address_reads="2/min")
    settings.TRUSTED_PROXIES = trusted_proxies_parse("10.20.0.0/16")
    client = player_client("p1")
    for thin_reads in (True, False):
        with override_settings(BOARDS_THIN_READS=thin_reads):
            for key in get_redis().scan_iter("lb:throttle:*"):
                get_redis().delete(key)

            def read_as(forwarded: str) -> int:
                return client.get(URL + read, REMOTE_ADDR="10.20.0.4", HTTP_X_FORWARDED_FOR=forwarded).status_code

            first = [read_as(f"192.0.2.{n}, 198.51.100.7") for n in range(3)]
            other = read_as("198.51.100.7, 198.51.100.8")
        assert (first, other) == ([200, 200, 429], 200), thin_reads


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

    from boards.api import FriendsBoardApi, PlayerStandingApi, TopApi
    from leaderboard_project import urls

    assert PlayerStandingApi.as_view().cls is PlayerStandingApi

    def plain(view_class):
        return APIView.as_view.__func__(view_class)

    board = urls.BOARD
    drf_patterns = [
        path(board + "players/<str:player>", plain(PlayerStandingApi), name="boards-player"),
        path(board + "players/<str:player>/friends", plain(FriendsBoardApi), name="boards-friends"),
        path(board + "top", plain(TopApi), name="boards-top"),
    ]
    wrapped = ("players", "top")
    wrapped_patterns = [p for p in include("boards.urls")[0].urlpatterns if str(p.pattern).startswith(wrapped)]
    wrapped_patterns = [path(board + str(p.pattern), p.callback, name=p.name) for p in wrapped_patterns]

    def schema(patterns):
        return json.dumps(SchemaGenerator(patterns=patterns).get_schema(request=None, public=True), sort_keys=True)

    assert schema(wrapped_patterns) == schema(drf_patterns)
    assert '"boards_player"' in schema(drf_patterns) and '"boards_friends"' in schema(drf_patterns)
    assert '"boards_top"' in schema(drf_patterns)


@pytest.mark.one_redis("one Redis: a sharded board's read is a pipeline per node (docs/reads.md)")
def test_a_players_own_warm_reads_are_one_redis_round_trip(social, topology, monkeypatch) -> None:
    """docs/reads.md's table: a player's own standing and own friends board, with this
    process's caches warm, cost one Redis round trip each (the board script, which counts the
    rate limits too), and a top page held for the second costs one: the public reads' limit per
    address (throttle.lua), none for the page itself. Counted at the
    connection's send, with the real Redis behind it."""
    from redis.connection import AbstractConnection  # every connection class sends through it

    sent: list[int] = []
    real_send = AbstractConnection.send_packed_command

    def counted_send(self, *args, **kwargs):
        sent.append(1)
        return real_send(self, *args, **kwargs)

    client = player_client("p1")
    anonymous = Client()
    for path in ("/boards/rating/players/p1?around=5", "/boards/rating/players/p1/friends", "/boards/rating/top"):
        reader = anonymous if path.endswith("/top") else client
        deadline = time.monotonic() + 10
        while True:
            period = cache_period(time.time())
            assert reader.get(URL + path).status_code == 200  # warms the process's caches
            monkeypatch.setattr(AbstractConnection, "send_packed_command", counted_send)
            sent.clear()
            assert reader.get(URL + path).status_code == 200
            monkeypatch.undo()
            # a top page is held until its cache period ends (TOP_CACHE_SECONDS): both reads in one
            if not path.endswith("/top") or cache_period(time.time()) == period or time.monotonic() > deadline:
                break
        # a held top page costs only the per-address limit's counter (docs/api.md §15)
        assert len(sent) == 1, path
