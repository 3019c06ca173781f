"""The reads' scripts run on a connection the calling thread keeps for itself
(rediskit/client.py, "the hot reads' round trip"; docs/reads.md, "What a read skips"). It must
behave as the pool's connections do: survive a Redis restart without a failed read, reload
scripts the restarted server forgot, never be shared by two threads or by a forked child, and
count its failures. A throwaway redis-server of the test's own is restarted and stopped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.test import override_settings
from redis import Redis
from redis.exceptions import NoScriptError

from rediskit import breaker
from rediskit.breaker import guarded_connection_class
from rediskit.client import REDIS_DOWN, get_redis, own_connection_command
from rediskit.scripts import LuaScript
from tests.boards.test_redis_down import ThrowawayRedis

ECHO = "return {KEYS[1], ARGV[1]}"


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    """A redis-server of the test's own behind the settings' pool: the breaker's connection class,
    counted (as settings.CACHES builds it)."""
    server = ThrowawayRedis(tmp_path)
    server.start()
    caches = server.caches(
        CONNECTION_POOL_KWARGS={"connection_class": guarded_connection_class(server.url)},
        CONNECTION_POOL_CLASS="monitoring.redis.CountingConnectionPool",
    )
    with override_settings(CACHES=caches):
        yield server
    if server.proc is not None and server.proc.poll() is None:
        server.stop()
    breaker.breakers_reset()


def _errors() -> float:
    from tests.monitoring.test_metrics import scrape, value

    return sum(
        value(scrape(), "leaderboard_redis_errors_total", error=e) or 0 for e in ("ConnectionError", "TimeoutError")
    )


def _client_id() -> int:
    return int(own_connection_command(get_redis(), "CLIENT", "ID"))


def test_a_script_answers_across_a_redis_restart_without_a_failed_call(own_redis) -> None:
    echo = LuaScript(get_redis(), ECHO)
    assert echo(keys=["k"], args=[1], client=get_redis()) == [b"k", b"1"]
    own_redis.stop()
    own_redis.start()  # same port, empty, no scripts loaded: the held socket is closed
    errors = _errors()
    # the closed socket is noticed before sending, and the forgotten script loaded again
    assert echo(keys=["k"], args=[2], client=get_redis()) == [b"k", b"2"]
    assert _errors() == errors  # no failed send or read on the way
    assert not breaker.breaker_for(get_redis().connection_pool.make_connection()).is_open


def test_each_thread_and_a_forked_child_have_connections_of_their_own(own_redis) -> None:
    mine = _client_id()
    assert _client_id() == mine  # kept, not one per call
    with ThreadPoolExecutor(max_workers=2) as pool:
        others = set(pool.map(lambda _: _client_id(), range(2)))
    assert mine not in others
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report its connection's id, then leave without cleanup
        try:
            os.write(write, str(_client_id()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        child_id = int(answer.read() or 0)
    os.waitpid(child, 0)
    assert child_id not in (0, mine)
    assert _client_id() == mine  # the parent's connection is untouched by the child


def test_a_failure_closes_the_connection_trips_the_breaker_and_is_counted(own_redis) -> None:
    _client_id()
    before = _errors()
    own_redis.stop()
    with pytest.raises(REDIS_DOWN):
        own_connection_command(get_redis(), "PING")
    assert _errors() > before
    with pytest.raises(breaker.RedisUnavailable):  # refused at once while the breaker is open
        own_connection_command(get_redis(), "PING")


def test_a_redis_error_reply_leaves_the_connection_in_step(own_redis) -> None:
    mine = _client_id()
    with pytest.raises(NoScriptError):
        own_connection_command(get_redis(), "EVALSHA", "0" * 40, 0)
    assert _client_id() == mine
    assert Redis.from_url(own_redis.url).ping()
