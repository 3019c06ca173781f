"""The index heals itself (boards/healing.py): the minute sampler finds members that differ
from Postgres, repairs them and counts the drift in /metrics; after a failover the values
written meanwhile are replayed."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from boards import healing, index
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board, PlayerValue
from scores.selectors import window_random_players
from tests.conftest import SignedClient, member_key

pytestmark = pytest.mark.usefixtures("topology")

URL = "/api/v1/games/chess"


def _submit(server: SignedClient, n: int) -> None:
    matches = [
        {
            "match_id": f"h-{i}",
            "ended_at": "2026-11-28T12:00:00Z",
            "results": [{"player": f"p{i}", "board": "rating", "score": 10 + i}],
        }
        for i in range(n)
    ]
    assert server.post(URL + "/matches/batch", {"matches": matches}).status_code == 200


def _top() -> list[tuple[str, int]]:
    return [(e["player"], e["score"]) for e in Client().get(URL + "/boards/rating/top?limit=50").json()["entries"]]


def test_the_sampler_repairs_and_counts_drift(server: SignedClient, game) -> None:
    _submit(server, 20)
    want = _top()
    rating = Board.objects.get(game=game, slug="rating")
    values = list(PlayerValue.objects.filter(board=rating, window="all").order_by("player_id"))
    r = index.index()
    lost, lowered = values[0], values[1]
    r.zrem(member_key(rating.id, "all", lost.player_id), str(lost.player_id))  # a write Redis lost
    r.zadd(member_key(rating.id, "all", lowered.player_id), {str(lowered.player_id): lowered.encoded - 2**30})
    r.zadd(member_key(rating.id, "all", 999_999), {"999999": 2**52})  # a member Postgres never had

    report = healing.index_sample_check(per_window=1000)
    assert report.drift == 3 and report.repaired == 3
    assert _top_fresh() == want
    assert r.zscore(member_key(rating.id, "all", 999_999), "999999") is None
    assert healing.index_sample_check(per_window=1000).drift == 0
    body = Client().get("/metrics").content.decode()
    assert "leaderboard_index_drift_total 3.0" in body
    assert "leaderboard_index_sampled_total" in body


def _top_fresh() -> list[tuple[str, int]]:
    from boards.api import TopApi

    TopApi._local.clear()
    from django.core.cache import cache

    cache.delete_pattern("top:*")
    return _top()


def test_after_a_failover_recent_values_are_replayed(server: SignedClient, game, topology) -> None:
    _submit(server, 5)
    rating = Board.objects.get(game=game, slug="rating")
    value = PlayerValue.objects.filter(board=rating, window="all").first()
    key = member_key(rating.id, "all", value.player_id)
    assert healing.failover_replay() == 0  # first look at the topology: nothing to compare with
    assert healing.failover_replay() == 0  # the same primaries
    # what an acknowledged write lost with its primary looks like, then a changed set of primaries
    index.index().zrem(key, str(value.player_id))
    seen = json.loads(get_redis().get(keys.HEAL_PRIMARIES) or "null")
    if topology == "one":
        assert seen is None and healing.failover_replay() == 0  # one Redis: no failover to follow
        return
    get_redis().set(keys.HEAL_PRIMARIES, json.dumps({"primaries": ["gone", *seen["primaries"][1:]], "at": time.time()}))
    assert healing.failover_replay() >= 5
    assert index.index().zscore(key, str(value.player_id)) == value.encoded


def test_the_postgres_sample_covers_a_small_window_whole(server: SignedClient, game) -> None:
    """The sampler's Postgres side starts at a random player id and wraps around: a window
    smaller than the sample is compared whole, however far apart its player ids are."""
    _submit(server, 20)
    rating = Board.objects.get(game=game, slug="rating")
    far = PlayerValue.objects.filter(board=rating, window="all").first()
    far.pk, far.player_id = None, 10**12  # ids far above the others: a start past every small id is likely
    far.save()
    everyone = set(PlayerValue.objects.filter(board=rating, window="all").values_list("player_id", flat=True))
    assert len(everyone) == 21
    for _ in range(20):
        assert set(window_random_players(rating.id, window="all", count=1000)) == everyone
    assert len(window_random_players(rating.id, window="all", count=5)) == 5
