"""A circuit breaker in front of every Redis connection of the ranking engine and the cache.

Redis killed answers at once (connection refused), but Redis hung (SIGSTOP, a full network
buffer) answers nothing: each command waits out its socket timeout (REDIS_SOCKET_TIMEOUT, 0.2 s;
0.5 s before), and a submission makes several, so each took 2-3 s. Here the first timeout or refusal
opens the breaker for that server: from then on every command fails at once with
RedisUnavailable (a redis ConnectionError, so every caller's `except REDIS_DOWN` degrades as
before: reads from Postgres, writes left in the outbox). A background thread of the process
PINGs the server every PROBE_INTERVAL seconds and closes the breaker when it answers; requests
never pay for the probe. Each change of state is one log line (WARNING down, INFO back), not a
traceback per request.

It is a connection class (redis-py's `connection_class`), set for the cache and the ranking
engine's pool in settings.CACHES, so every user of get_redis() or django's cache has it:
GuardedConnection for TCP, GuardedUnixConnection for a unix:// REDIS_URL (guarded_connection_class).
Standard library and redis-py only: settings import it."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

from redis.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

PROBE_INTERVAL = 0.5  # seconds between PINGs while a server is down
TRIPS = (RedisConnectionError, RedisTimeoutError, socket.timeout, OSError)


class RedisUnavailable(RedisConnectionError):
    """Refused without trying: the breaker for this server is open."""


class Breaker:
    """The state of one Redis server as this process sees it."""

    def __init__(self, name: str, probe: Connection) -> None:
        self.name = name
        self._probe = probe
        self._lock = threading.Lock()
        self.open_since: float | None = None
        self._thread: threading.Thread | None = None

    @property
    def is_open(self) -> bool:
        return self.open_since is not None

    def trip(self, exc: BaseException) -> None:
        with self._lock:
            if self.open_since is not None:
                return
            self.open_since = time.monotonic()
            log.warning(
                "Redis %s unreachable (%s: %s): failing fast until it answers again; reads degrade to Postgres, "
                "accepted results wait in the outbox",
                self.name,
                exc.__class__.__name__,
                exc,
            )
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name=f"redis-breaker-{self.name}", daemon=True)
                self._thread.start()

    def _watch(self) -> None:
        while True:
            time.sleep(PROBE_INTERVAL)
            try:
                self._probe.connect()
                self._probe.send_command("PING")
                self._probe.read_response()
            except Exception:
                self._probe.disconnect()
                continue
            self._probe.disconnect()
            with self._lock:
                down = time.monotonic() - (self.open_since or time.monotonic())
                # logged before the breaker closes, so whoever sees it closed finds the line
                log.info("Redis %s is back after %.1f s", self.name, down)
                self.open_since = None
                self._thread = None
            return


_breakers: dict[str, Breaker] = {}
_registry_lock = threading.Lock()


def breaker_for(conn: Connection | UnixDomainSocketConnection) -> Breaker:
    unix = isinstance(conn, UnixDomainSocketConnection)
    where = conn.path if unix else f"{getattr(conn, 'host', '?')}:{getattr(conn, 'port', '?')}"
    name = f"{where}/{getattr(conn, 'db', 0)}"
    found = _breakers.get(name)
    if found is None:
        with _registry_lock:
            found = _breakers.get(name)
            if found is None:
                common = {
                    "db": conn.db,
                    "username": conn.username,
                    "password": conn.password,
                    "socket_timeout": conn.socket_timeout,
                }
                probe = (
                    UnixDomainSocketConnection(path=conn.path, **common)
                    if unix
                    else Connection(
                        host=conn.host, port=conn.port, socket_connect_timeout=conn.socket_connect_timeout, **common
                    )
                )
                found = _breakers[name] = Breaker(name, probe)
    return found


def breakers_reset() -> None:
    """Forget every server's state (tests that start and stop servers of their own)."""
    with _registry_lock:
        _breakers.clear()


def _forget_after_fork() -> None:
    """A forked process (a Celery pool process, started again after a cancelled task) has none of
    its parent's threads: an open breaker would have no probe to close it, and refuse Redis for
    good, and a lock a thread held would stay held. It starts as a new process does, with no
    breakers: its own first failure trips its own."""
    global _registry_lock
    _registry_lock = threading.Lock()
    _breakers.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


class _Guarded:
    """Fails at once while the connection's server's breaker is open (mixed into redis-py's
    TCP and unix-socket connections below)."""

    def _guard(self) -> Breaker:
        breaker = breaker_for(self)
        if breaker.is_open:
            raise RedisUnavailable(f"Redis {breaker.name} is unreachable (circuit open)")
        return breaker

    def connect_check_health(self, *args: Any, **kwargs: Any) -> None:
        if self._sock is not None:
            return
        breaker = self._guard()
        try:
            super().connect_check_health(*args, **kwargs)
        except TRIPS as exc:
            breaker.trip(exc)
            raise

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        breaker = self._guard()
        try:
            super().send_packed_command(command, check_health)
        except TRIPS as exc:
            if not isinstance(exc, RedisUnavailable):
                breaker.trip(exc)
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except TRIPS as exc:
            if not isinstance(exc, RedisUnavailable):
                breaker_for(self).trip(exc)
            raise


class GuardedConnection(_Guarded, Connection):
    """redis-py's TCP connection, failing at once while its server's breaker is open."""


class GuardedUnixConnection(_Guarded, UnixDomainSocketConnection):
    """The same over a unix socket (REDIS_URL unix:///path/redis.sock?db=N)."""


def guarded_connection_class(url: str) -> type[Connection] | type[UnixDomainSocketConnection]:
    """The guarded connection class for a Redis URL: an explicit connection_class overrides the
    one redis-py derives from the URL's scheme, so it must match it."""
    return GuardedUnixConnection if url.startswith("unix:") else GuardedConnection
