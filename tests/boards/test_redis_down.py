"""Redis down: submissions still succeed (Postgres holds them) and reach the boards when
Redis is back. A real redis-server is started and stopped by the test."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings
from redis import Redis

from boards import services
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board, BoardOutbox, PlayerValue
from scripts.services import redis_server_binary, spare_port
from tests.conftest import SignedClient
from tests.projector import applied

URL = "/api/v1/games/chess/matches"


class ThrowawayRedis:
    def __init__(self, workdir: Path) -> None:
        binary = redis_server_binary()
        if binary is None:
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        self.binary, self.dir = binary, workdir
        self.port = spare_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
                "--dbfilename",
                "dump.rdb",
            ],
            stdout=subprocess.DEVNULL,
        )
        client = Redis.from_url(self.url)
        for _ in range(500):  # wait for readiness (bounded), not a fixed sleep
            try:
                client.ping()
                return
            except Exception:
                time.sleep(0.01)
        raise RuntimeError("throwaway redis did not start")

    def caches(self, **options: object) -> dict:
        """settings.CACHES on this server: short timeouts, errors ignored as the service's cache
        ignores them, and `options` added (a connection class, a pool class)."""
        return {
            "default": {
                "BACKEND": "django_redis.cache.RedisCache",
                "LOCATION": self.url,
                "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5, "IGNORE_EXCEPTIONS": True, **options},
            }
        }

    def stop(self, save: bool = False) -> None:
        if save:
            Redis.from_url(self.url).save()
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(tmp_path)
    server.start()
    with override_settings(CACHES=server.caches()):
        yield server
    if server.proc and server.proc.poll() is None:
        server.stop()


def _match(match_id: str, player: str, score: int) -> dict:
    return {
        "match_id": match_id,
        "ended_at": "2026-11-28T12:00:00Z",
        "results": [{"player": player, "board": "rating", "score": score}],
    }


def _board_members(board: Board) -> dict[str, int]:
    return {m.decode(): int(s) for m, s in get_redis().zrange(keys.board_key(board.id, "all"), 0, -1, withscores=True)}


def _expected(board: Board) -> dict[str, int]:
    return {
        str(p): e for p, e in PlayerValue.objects.filter(board=board, window="all").values_list("player_id", "encoded")
    }


def test_submissions_survive_a_redis_restart_that_lost_everything(server: SignedClient, game, throwaway_redis) -> None:
    board = Board.objects.get(game=game, slug="rating")
    services.boards_rebuild()  # marks the index as built
    assert server.post(URL, _match("before", "p1", 100)).status_code == 201
    assert _board_members(board) == _expected(board)

    throwaway_redis.stop()
    redis_down = server.at_the_answer()  # nothing reaches Redis now
    response = redis_down.post(URL, _match("during", "p2", 200))
    assert response.status_code == 201
    assert redis_down.post(URL + "/batch", {"matches": [_match("during-batch", "p3", 300)]}).status_code == 200
    applied("the matches applied to Postgres while Redis is down")
    # "before"'s row (applied, awaiting the drain) and the missed two's: one row per projector
    # batch, and the projector may fold both into one
    assert BoardOutbox.objects.count() in (2, 3)
    health = server.client.get("/healthz")
    assert health.status_code == 503 and health.json()["redis"] != "ok" and health.json()["postgres"] == "ok"

    throwaway_redis.start()  # empty: Redis kept nothing on disk
    assert _board_members(board) == {}
    services.board_index_heal(grace_seconds=0)  # the periodic job: rebuild (marker gone) and drain
    assert _board_members(board) == _expected(board)
    assert len(_board_members(board)) == 3
    assert server.client.get("/healthz").status_code == 200


def test_outbox_replays_what_redis_missed_when_it_comes_back_with_its_data(
    server: SignedClient, game, throwaway_redis
) -> None:
    board = Board.objects.get(game=game, slug="rating")
    services.boards_rebuild()
    server.post(URL, _match("a", "p1", 100))
    throwaway_redis.stop(save=True)
    redis_down = server.at_the_answer()  # nothing reaches Redis now
    assert redis_down.post(URL, _match("b", "p1", 500)).status_code == 201
    assert redis_down.post(URL, _match("c", "p2", 50)).status_code == 201
    applied("the matches applied to Postgres while Redis is down")
    throwaway_redis.start()  # back with the data it saved, but without b and c
    assert len(_board_members(board)) == 1
    # no rebuild needed: the outbox replays both (a row per projector batch, which may hold both)
    assert services.board_index_heal(grace_seconds=0) in (1, 2)
    assert _board_members(board) == _expected(board)
    assert not BoardOutbox.objects.exists()


def test_paging_by_cursor_goes_on_from_postgres_while_redis_is_down(
    server: SignedClient, game, throwaway_redis
) -> None:
    """boards/cursor.py's fallback (scores.selectors.durable_after): the same order, exact ranks."""
    scores = {"p1": 500, "p2": 400, "p3": 400, "p4": 300, "p5": 100}
    results = [{"player": p, "board": "rating", "score": s} for p, s in scores.items()]
    assert (
        server.post(URL, {"match_id": "m", "ended_at": "2026-11-28T12:00:00Z", "results": results}).status_code == 201
    )
    top = "/api/v1/games/chess/boards/rating/top"
    first = server.client.get(f"{top}?limit=2").json()
    assert [e["player"] for e in first["entries"]] == ["p1", "p2"]
    throwaway_redis.stop()
    page = server.client.get(f"{top}?limit=2&cursor={first['next_cursor']}").json()
    assert page["degraded"] is True and page["total"] == 5
    assert [(e["rank"], e["player"]) for e in page["entries"]] == [(3, "p3"), (4, "p4")]
    last = server.client.get(f"{top}?limit=2&cursor={page['next_cursor']}").json()
    assert [(e["rank"], e["player"]) for e in last["entries"]] == [(5, "p5")] and last["next_cursor"] is None
