"""One implementation per read (docs/architecture.md, "One implementation per hot endpoint"):
every GET of a player's standing, their friends board and a board's top is answered by the
view's own `get` (boards/api/players.py, boards/api/top.py), never by DRF's request machinery,
on one Redis and on the local cluster. A player's own read (its hot form, docs/reads.md "A
player's own read") answers byte for byte what a server key's read of the same player answers,
and every body is what DRF's own JSON renderer writes for it."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer

from boards.api.top import TopApi, cache_period
from boards.profiles import local_caches_clear
from leaderboard_project.plain import _stdlib_json_bytes, json_bytes
from leaderboard_project.proxies import trusted_proxies_parse
from rediskit.client import get_redis
from scores.models import Board
from scores.selectors import config_cache_clear
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
    # errors and unusual queries
    "/boards/rating/players/{p}?around=51",
    "/boards/rating/players/{p}?around=",
    "/boards/rating/players/{p}?window=nope",
    "/boards/nope/players/{p}",
    "/boards/rating/players/{p}?around=1&around=2",
]


def answers(client: Client | SignedClient, path: str) -> tuple[int, bytes, dict[str, str | None]]:
    response = client.get(URL + path)
    headers = {h: response.get(h) for h in ("Content-Type", "Allow", "Cache-Control", "Vary")}
    return response.status_code, response.content, headers


def test_a_players_own_read_answers_what_a_signed_read_of_them_answers(social, topology, drf_entries) -> None:
    """The hot form (the token and the limits checked in the board script's round trip) and
    the general one (a server key's read) give the same status, bytes and headers; each body
    is what DRF's renderer writes for it; DRF's request machinery serves none of them."""
    for player in ("p1", "p2", "p4", "p5"):
        client = player_client(player)
        for read in READS:
            path = read.format(p=player)
            own = answers(client, path)
            assert own == answers(social, path), path
            status, body, headers = own
            assert headers["Allow"] == "GET, HEAD, OPTIONS" and headers["Content-Type"] == "application/json"
            assert body == JSONRenderer().render(json.loads(body)), path
            if status == 200 and "/rating/players/p4" in path and "window=daily:2026-11-27" not in path:
                assert b"\\u2028" in body and b"1e-05" in body  # the odd metadata went through
            if status != 200:
                assert set(json.loads(body)) == {"error"}, path
    assert drf_entries == []


def test_other_players_reads_are_answered_by_the_same_get(social, topology, drf_entries) -> None:
    """A friend's read, a stranger's and an unauthenticated one: the same `get`, with the
    statuses docs/api.md §3.3 gives (a friend reads, a stranger is refused 403, no credentials 401)."""
    friend, stranger = player_client("p2"), player_client("p5")
    for read in ("/boards/rating/players/{p}", "/boards/rating/players/{p}/friends"):
        path = URL + read.format(p="p1")
        assert friend.get(path).content == social.get(path).content
        refused = stranger.get(URL + read.format(p="p3"))
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        anonymous = Client().get(path)
        assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == 'HMAC-SHA256 realm="leaderboard"'
        assert Client().head(path).status_code == 401
        assert Client().options(path).status_code == 200  # OPTIONS is DRF's
    assert drf_entries == ["OPTIONS", "OPTIONS"]


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


def test_a_top_page_is_the_same_computed_or_held(social, topology, drf_entries) -> None:
    """A page read first in this cache period (computed, or from the shared cache) and the same
    page answered again from this process's memory: the same status, bytes and headers, by the
    one `get`."""
    client = Client()
    for path in TOP_READS:
        deadline = time.monotonic() + 10
        while True:  # both reads within one cache period (TOP_CACHE_SECONDS), so both answer one page
            TopApi._local.clear()
            period = cache_period(time.time())
            computed = top_answers(client, path)
            held = top_answers(client, path)
            if cache_period(time.time()) == period or time.monotonic() > deadline:
                break
        assert computed[0] == 200, path
        assert held == computed, path
        assert computed[2]["Allow"] == "GET, HEAD, OPTIONS"
        assert computed[1] == JSONRenderer().render(json.loads(computed[1]))
    for path, code in (("/boards/rating/top?limit=0", 400), ("/boards/nope/top", 404)):
        assert client.get(URL + path).status_code == code
    assert drf_entries == []


FRIENDS_READS = [r for r in READS if r.endswith("/friends") or "/friends?" in r]


def test_a_friends_read_answers_the_same_whatever_its_caches_hold(social, topology) -> None:
    """friends.lua reads the cached friend list and profiles in the board read's round trip
    (docs/reads.md, "One round trip per read"): with both caches warm, with this process's
    profiles forgotten (the script's copies are used), and with the friend list and every shared
    profile gone too (the list reloaded from Postgres), a read gives the same bytes."""

    def cold_shared() -> None:
        local_caches_clear()
        for pattern in ("fl:*", "pv:*"):
            for key in get_redis().scan_iter(pattern):
                get_redis().delete(key)

    for player in ("p1", "p2", "p5"):
        client = player_client(player)
        for read in FRIENDS_READS:
            path = read.format(p=player)
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
def test_a_throttled_own_read_is_the_same_429_as_a_friends(social, settings, read) -> None:
    """The player's own read counts its limits in the board script; a friend's read counts them
    on its own, before the board is looked up: the same 429 either way."""
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"player_reads": "2/min", "address_reads": "1000/min"},
    }
    seen = []
    for reader in ("p1", "p2"):  # the player, then a friend
        client = player_client(reader)
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
    for reader in ("p1", "p2"):  # the player's own read, then a friend's
        client = player_client(reader)
        for key in get_redis().scan_iter("lb:throttle:*"):
            get_redis().delete(key)

        def read_as(forwarded: str, client: Client = client) -> int:
            return client.get(URL + read, REMOTE_ADDR="10.20.0.4", HTTP_X_FORWARDED_FOR=forwarded).status_code

        first = [read_as(f"192.0.2.{n}, 198.51.100.7") for n in range(3)]
        other = read_as("198.51.100.7, 198.51.100.8")
        assert (first, other) == ([200, 200, 429], 200), reader


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25,
)


@pytest.mark.one_redis("writing JSON reads no board")
@settings(max_examples=400, deadline=None)
@given(json_values)
def test_json_bytes_writes_what_drf_writes(value) -> None:
    body = {"metadata": value, "percentile": 99.99}
    try:
        expected = _stdlib_json_bytes(body)
    except (UnicodeEncodeError, ValueError):  # lone surrogates: DRF fails on them too
        return
    assert json_bytes(body) == expected == JSONRenderer().render(body)


@pytest.mark.one_redis("the schema reads no board")
def test_the_openapi_schema_documents_the_reads() -> None:
    """drf-spectacular reads the views' decorated `get`s: each read keeps its operation, its
    parameters and its errors."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    ops = {op["operationId"]: op for item in schema["paths"].values() for op in item.values() if "operationId" in op}
    for name, params, errors in (
        ("boards_player", {"window", "region", "around"}, {"400", "401", "403", "404", "429"}),
        ("boards_friends", {"window", "region"}, {"400", "401", "403", "404", "429"}),
        ("boards_top", {"window", "region", "limit", "offset", "cursor"}, {"400", "404", "429"}),
    ):
        assert {p["name"] for p in ops[name]["parameters"] if p["in"] == "query"} == params, name
        assert errors <= set(ops[name]["responses"]), name


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
