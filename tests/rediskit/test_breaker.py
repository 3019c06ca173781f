"""Redis hung (SIGSTOP, not dead): after the first timeout every Redis call of the process
fails at once instead of waiting out its own timeout, submissions still succeed (Postgres
holds them), reads degrade to Postgres, each state change is one log line, and the breaker
closes by itself once Redis answers. A throwaway redis-server of the test's own is paused."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator

import pytest
from django.test import Client, override_settings
from redis.exceptions import TimeoutError as RedisTimeoutError

from boards.services import board_index_heal
from rediskit import breaker, keys
from rediskit.breaker import GuardedConnection, RedisUnavailable
from rediskit.client import get_redis
from scores.models import BoardOutbox, Match
from tests.boards.test_redis_down import URL, ThrowawayRedis, _match
from tests.conftest import SignedClient
from tests.projector import applied


@pytest.fixture
def guarded_redis(tmp_path) -> Iterator[ThrowawayRedis]:
    server = ThrowawayRedis(tmp_path)
    server.start()
    with override_settings(CACHES=server.caches(CONNECTION_POOL_KWARGS={"connection_class": GuardedConnection})):
        get_redis().set(keys.BUILT_MARKER, "test")
        yield server
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGCONT)
    server.stop()
    breaker.breakers_reset()


def _open(server: ThrowawayRedis) -> bool:
    found = breaker._breakers.get(f"127.0.0.1:{server.port}/0")
    return found is not None and found.is_open


def test_a_hung_redis_costs_one_timeout_then_fails_fast_and_heals(server: SignedClient, game, guarded_redis, caplog):
    assert server.post(URL, _match("before", "p1", 100)).status_code == 201
    os.kill(guarded_redis.proc.pid, signal.SIGSTOP)
    hung = server.at_the_answer()  # nothing reaches Redis now
    with caplog.at_level(logging.INFO, logger="rediskit.breaker"):
        for i in range(5):
            assert hung.post(URL, _match(f"hung-{i}", f"p{i}", 200 + i)).status_code == 201
        applied("the matches applied to Postgres while Redis hangs")
        assert _open(guarded_redis)
        with pytest.raises(RedisUnavailable):  # refused without touching the socket
            get_redis().ping()
        top = Client().get("/api/v1/games/chess/boards/rating/top")
        assert top.status_code == 200 and top.json()["degraded"] is True  # from Postgres
        assert top.json()["total"] == 5  # p0..p4
        # what Redis missed waits in the outbox: a row per projector batch, which may hold several
        assert Match.objects.count() == 6 and BoardOutbox.objects.exists()
        health = Client().get("/healthz")
        assert health.status_code == 503 and health.json()["redis"].startswith("down")

        os.kill(guarded_redis.proc.pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while _open(guarded_redis):
            assert time.monotonic() < deadline, "the breaker did not close after Redis came back"
            time.sleep(0.05)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "rediskit.breaker"]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()  # one line, not one per call
    assert any("is back" in r.getMessage() for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records)  # no tracebacks
    board_index_heal(grace_seconds=0)
    members = get_redis().zcard(keys.board_key(game.boards.get(slug="rating").id, "all"))
    assert members == 5


def test_a_process_forked_while_the_breaker_is_open_finds_redis_again_once_it_answers(guarded_redis) -> None:
    """A process forked while its parent's breaker is open (a Celery pool process started while
    Redis was hung) gets none of the parent's threads, so no probe of its own: it must still
    find Redis again once Redis answers, not refuse it for good."""
    os.kill(guarded_redis.proc.pid, signal.SIGSTOP)
    with pytest.raises(RedisTimeoutError):
        get_redis().ping()
    assert _open(guarded_redis)
    child = os.fork()
    if child == 0:  # the child: ping until Redis answers, exit 0 if it did within 10 s
        code = 1
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and code:
                try:
                    code = 0 if get_redis().ping() else 1
                except (RedisUnavailable, RedisTimeoutError):  # refused, or still hung: its first try
                    time.sleep(0.05)
        finally:
            os._exit(code)  # never back into pytest in the child
    os.kill(guarded_redis.proc.pid, signal.SIGCONT)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the forked process never found Redis again"


def test_reads_answer_from_postgres_while_the_index_is_not_rebuilt(server: SignedClient, game) -> None:
    """Redis restarted empty: until the rebuild sets its marker, a board is answered from
    Postgres and marked degraded, never served partial as whole."""
    for i in range(3):
        assert server.post(URL, _match(f"m{i}", f"p{i}", 100 + i)).status_code == 201
    get_redis().flushdb()  # what a restart of a Redis that keeps nothing on disk looks like
    # the mirror of the three before is gone with it: only the projector's apply can be waited for
    fresh_redis = server.at_the_answer()
    assert fresh_redis.post(URL, _match("after", "late", 50)).status_code == 201  # one entry on the fresh board
    applied("the late match applied")
    top = Client().get("/api/v1/games/chess/boards/rating/top").json()
    assert top["degraded"] is True and top["total"] == 4 and len(top["entries"]) == 4
    board_index_heal(grace_seconds=0)
    Client().get("/healthz")
    from boards.api import TopApi

    TopApi._local.clear()
    fresh = Client().get("/api/v1/games/chess/boards/rating/top?limit=5").json()
    assert "degraded" not in fresh and fresh["total"] == 4
