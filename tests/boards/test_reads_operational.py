"""Reads under load and failure: SQL query counts, throttling, Redis down."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from boards.throttles import PlayerReadThrottle
from rediskit.client import get_redis
from scores.models import Player
from scores.selectors import config_cache_clear
from tests.boards.conftest import URL, player_client, submit
from tests.boards.test_redis_down import ThrowawayRedis
from tests.conftest import SignedClient
from tests.scores.test_ingest_api import assert_error


def queries(client: Client | SignedClient, path: str) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries), response.json()


@pytest.fixture
def crowd(server: SignedClient, game) -> SignedClient:
    submit(server, "big", [{"player": f"p{i:03d}", "board": "rating", "score": i * 3} for i in range(100)])
    server.request(
        "PUT", URL + "/players/p050/friends", {"friends": [f"p{i:03d}" for i in range(0, 100, 2) if i != 50]}
    )
    return server


def test_top_costs_no_query_once_warm_and_one_when_cold(crowd) -> None:
    config_cache_clear()
    cold, body = queries(Client(), URL + "/boards/rating/top?limit=100")
    assert len(body["entries"]) == 100
    assert cold == 5  # game config (game, seasons, regions, boards), then one batch of profiles for the whole page
    warm, _ = queries(Client(), URL + "/boards/rating/top?limit=100")
    assert warm == 0


def test_player_standing_queries_are_pinned(crowd) -> None:
    config_cache_clear()
    first, body = queries(crowd, URL + "/boards/rating/players/p050?around=50")
    assert len(body["around"]) == 100  # everyone: p050 is 50th of 100
    # game config (game, seasons, regions, boards), the player id, one profiles batch; the server
    # key is cached in the process since the fixture's submissions
    assert first == 6
    again, _ = queries(crowd, URL + "/boards/rating/players/p050?around=50")
    assert again == 0  # the key, names, ids and profiles all come from caches


def test_player_token_reads_need_no_query_when_warm(crowd) -> None:
    client = player_client("p050")
    queries(client, URL + "/boards/rating/players/p050/friends")
    count, body = queries(client, URL + "/boards/rating/players/p050/friends")
    assert len(body["entries"]) == 50
    assert count == 0


def throttle_clock_pinned(monkeypatch) -> None:
    """Pin the throttle's clock inside one counting window: the limits are counted in fixed
    windows (boards/throttles.py), and a minute turning mid-test would start every counter
    afresh. The middle of the current hour is inside one window of every period up to an hour,
    at the start of its minute."""
    pinned = time.time() // 3600 * 3600 + 1800
    monkeypatch.setattr(PlayerReadThrottle, "clock", staticmethod(lambda: pinned))


def throttle_rates(monkeypatch, **rates: str) -> None:
    """Set the read limits, on the pinned clock."""
    from django.conf import settings

    monkeypatch.setitem(settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES", rates)
    throttle_clock_pinned(monkeypatch)


def test_player_reads_are_throttled_per_token_with_retry_after(crowd, monkeypatch) -> None:
    throttle_rates(monkeypatch, player_reads="3/min", address_reads="1000/min")
    client = player_client("p050")
    for _ in range(3):
        assert client.get(URL + "/boards/rating/players/p050").status_code == 200
    limited = client.get(URL + "/boards/rating/players/p050")
    assert_error(limited, 429, "rate_limited")
    assert int(limited["Retry-After"]) > 0
    assert_error(client.get(URL + "/boards/rating/players/p050/friends"), 429)
    # another player is not affected; game servers are never throttled
    assert player_client("p052").get(URL + "/boards/rating/players/p052").status_code == 200
    for _ in range(5):
        assert crowd.get(URL + "/boards/rating/players/p050").status_code == 200


def test_reads_are_throttled_per_address(crowd, monkeypatch) -> None:
    throttle_rates(monkeypatch, player_reads="1000/min", address_reads="2/min")
    assert player_client("p050").get(URL + "/boards/rating/players/p050").status_code == 200
    assert player_client("p052").get(URL + "/boards/rating/players/p052").status_code == 200
    assert_error(player_client("p054").get(URL + "/boards/rating/players/p054"), 429)


def test_the_default_limits_are_120_reads_a_minute_per_caller_and_1200_per_address(crowd, monkeypatch) -> None:
    """docs/api.md §15, with no THROTTLE_* in the environment (the test's is such)."""
    from django.conf import settings

    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] == {"player_reads": "120/min", "address_reads": "1200/min"}
    throttle_clock_pinned(monkeypatch)
    me = player_client("p050")
    for _ in range(120):
        assert me.get(URL + "/boards/rating/players/p050").status_code == 200
    limited = me.get(URL + "/boards/rating/players/p050")
    assert_error(limited, 429, "rate_limited")
    assert limited["Retry-After"] == "60"  # the pinned clock is at the start of its minute
    # one address (the test client's): every read counts, the refused one too, to 1200
    counted = 121
    for player in (f"p{i:03d}" for i in range(51, 61)):
        client = player_client(player)
        for _ in range(min(120, 1200 - counted)):
            assert client.get(URL + f"/boards/rating/players/{player}").status_code == 200
            counted += 1
    assert counted == 1200
    refused = player_client("p061").get(URL + "/boards/rating/players/p061")  # its first read
    assert_error(refused, 429, "rate_limited")
    assert refused["Retry-After"] == "60"
    # game servers are not limited (they read for many players from one address)
    assert crowd.get(URL + "/boards/rating/players/p061").status_code == 200


def test_reads_fall_back_to_postgres_when_redis_is_down(crowd, tmp_path) -> None:
    expected_top = Client().get(URL + "/boards/rating/top?limit=5&offset=3").json()
    expected_me = crowd.get(URL + "/boards/rating/players/p050?around=2").json()
    expected_friends = crowd.get(URL + "/boards/rating/players/p050/friends").json()
    dead = ThrowawayRedis(tmp_path)  # never started: nothing listens on its port
    caches = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": dead.url,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.2, "SOCKET_TIMEOUT": 0.2, "IGNORE_EXCEPTIONS": True},
        }
    }
    from boards.api import TopApi

    TopApi._local.clear()
    with override_settings(CACHES=caches):
        top = Client().get(URL + "/boards/rating/top?limit=5&offset=3")
        assert top.status_code == 200
        assert top.json() == {**expected_top, "degraded": True}
        me = crowd.get(URL + "/boards/rating/players/p050?around=2")
        assert me.status_code == 200 and me.json() == {**expected_me, "degraded": True}
        friends = crowd.get(URL + "/boards/rating/players/p050/friends")
        assert friends.status_code == 200 and friends.json() == {**expected_friends, "degraded": True}
        unranked = crowd.get(URL + "/boards/rating/players/p050?window=daily:2026-11-01").json()
        assert unranked["rank"] is None and unranked["degraded"] is True
    assert get_redis().ping()
    assert Player.objects.count() == 100
