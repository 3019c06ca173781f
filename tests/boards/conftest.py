from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.db.models.signals import pre_save
from django.test import Client

from boards import index, keys
from scores.models import Board, Player
from scores.services import player_token_issue
from tests.conftest import SignedClient, index_flush, mark_index_built

URL = "/api/v1/games/chess"


def submit(server: SignedClient, match_id: str, results: list[dict], at: str = "2026-11-28T12:00:00Z") -> None:
    response = server.post(f"{URL}/matches", {"match_id": match_id, "ended_at": at, "results": results})
    assert response.status_code == 201, response.content


def player_client(player: str) -> Client:
    token, _ = player_token_issue(player=Player.objects.get(external_id=player))
    return Client(headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def ranked(server: SignedClient, game) -> SignedClient:
    """rating: p1 500, p2 400, p3 400 (p3 earlier), p4 300, p5 100; golf (asc): p1 70, p2 72."""
    submit(
        server,
        "m1",
        [{"player": "p1", "board": "rating", "score": 500, "display_name": "Ana", "metadata": {"replay": "r1"}}],
    )
    submit(server, "m2", [{"player": "p2", "board": "rating", "score": 400}], at="2026-11-28T12:00:05Z")
    submit(server, "m3", [{"player": "p3", "board": "rating", "score": 400}], at="2026-11-28T12:00:01Z")
    submit(
        server,
        "m4",
        [{"player": "p4", "board": "rating", "score": 300}, {"player": "p5", "board": "rating", "score": 100}],
    )
    submit(
        server, "m5", [{"player": "p1", "board": "golf", "score": 70}, {"player": "p2", "board": "golf", "score": 72}]
    )
    return server


SHARDS = 4  # the cluster topology's boards


@pytest.fixture(params=["one", "cluster"])
def topology(request: pytest.FixtureRequest, settings) -> Iterator[str]:
    """The test runs twice: on one Redis with unsharded boards, as before, and with the
    ranking index on the project-local Redis Cluster (scripts/cluster.py), every board created
    meanwhile spread over SHARDS sorted sets per window."""
    if request.param == "one":
        yield "one"
        return
    url = os.environ.get("TEST_REDIS_CLUSTER_URL", "")
    assert url, "run the tests through scripts/services.py exec --for-tests (it starts the local cluster)"
    settings.REDIS_CLUSTER_URL = url
    index_flush()
    mark_index_built()

    def sharded(sender: type, instance: Board, **kwargs: object) -> None:
        if instance._state.adding and instance.shards == 1:
            instance.shards = SHARDS

    pre_save.connect(sharded, sender=Board, dispatch_uid="tests.sharded_boards")
    try:
        yield "cluster"
    finally:
        pre_save.disconnect(sender=Board, dispatch_uid="tests.sharded_boards")


def set_keys(board_id: int, window: str) -> list[str]:
    """Every sorted set of a board window in the current topology."""
    return keys.shard_keys(board_id, window, Board.objects.get(pk=board_id).shards)


def member_key(board_id: int, window: str, member: int | str) -> str:
    """The sorted set of a board window that holds this player (primary key)."""
    return keys.player_key(board_id, window, Board.objects.get(pk=board_id).shards, int(member))


def set_members(board_id: int, window: str) -> dict[bytes, float]:
    """member -> score over every shard of a board window."""
    out: dict[bytes, float] = {}
    for key in set_keys(board_id, window):
        out.update(index.index().zrange(key, 0, -1, withscores=True))
    return out
