"""Redis over a unix socket (REDIS_URL unix:///path/redis.sock?db=N): the breaker
(rediskit/breaker.py) guards those connections as it guards TCP ones. A real redis-server of the
test's own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client, override_settings
from redis import Redis
from redis.exceptions import TimeoutError as RedisTimeoutError

from rediskit import breaker, keys
from rediskit.breaker import GuardedUnixConnection, RedisUnavailable, guarded_connection_class
from rediskit.client import get_redis
from scripts import services


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: a socket's path must fit in 107 bytes (pytest's tmp_path may not)."""
    path = Path(tempfile.mkdtemp(prefix="lb-sock-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_unix_redis_url_keeps_its_form_for_the_test_database() -> None:
    url = "unix:///run/redis/redis.sock?db=0"
    assert services.with_redis_db(url, services.TEST_REDIS_DB) == "unix:///run/redis/redis.sock?db=15"
    assert guarded_connection_class(url) is GuardedUnixConnection


@pytest.fixture
def unix_redis(short_dir: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    binary = services.redis_server_binary()
    if binary is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server)")
    sock = short_dir / "redis.sock"
    proc = subprocess.Popen(
        [binary, "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no", "--dir", str(short_dir)],
        stdout=subprocess.DEVNULL,
    )
    url = f"unix://{sock}?db=0"
    for _ in range(500):  # readiness, bounded
        try:
            Redis.from_url(url).ping()
            break
        except Exception:
            time.sleep(0.01)
    caches = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": url,
            "OPTIONS": {
                "SOCKET_CONNECT_TIMEOUT": 0.5,
                "SOCKET_TIMEOUT": 0.5,
                "CONNECTION_POOL_KWARGS": {"connection_class": guarded_connection_class(url)},
                "IGNORE_EXCEPTIONS": True,
            },
        }
    }
    try:
        with override_settings(CACHES=caches):
            get_redis().set(keys.BUILT_MARKER, "test")
            yield proc, str(sock)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=10)
        breaker.breakers_reset()


def test_the_breaker_guards_unix_socket_connections(game, unix_redis) -> None:
    proc, sock = unix_redis
    assert get_redis().ping() is True
    os.kill(proc.pid, signal.SIGSTOP)
    started = time.monotonic()
    # the stopped server accepts the bytes and answers nothing: the read waits out its timeout
    with pytest.raises(RedisTimeoutError, match="^Timeout reading from socket$"):
        get_redis().ping()
    assert time.monotonic() - started < 2  # one socket timeout
    assert breaker._breakers[f"{sock}/0"].is_open
    started = time.monotonic()
    for _ in range(20):
        with pytest.raises(RedisUnavailable):  # refused without touching the socket
            get_redis().ping()
    assert time.monotonic() - started < 0.5
    top = Client().get("/api/v1/games/chess/boards/rating/top")
    assert top.status_code == 200 and top.json()["degraded"] is True  # from Postgres
    os.kill(proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while breaker._breakers[f"{sock}/0"].is_open:
        assert time.monotonic() < deadline, "the breaker did not close after Redis came back"
        time.sleep(0.05)
    assert get_redis().ping() is True
