"""The connection pool of the boards' and the cache's Redis (settings CACHES, django-redis'
CONNECTION_POOL_CLASS): redis-py's, with every failed connect, send and read counted in
leaderboard_redis_errors_total. TCP and unix-socket URLs alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from redis.connection import Connection, ConnectionPool, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from monitoring.metrics import REDIS_ERRORS

_FAILURES = (RedisConnectionError, RedisTimeoutError, OSError)


def _counted(name: str) -> Callable[..., Any]:
    """The connection's method `name`, counting its failures."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(super(_Counting, self), name)(*args, **kwargs)
        except _FAILURES as exc:
            REDIS_ERRORS.labels(type(exc).__name__).inc()
            raise

    method.__name__ = name
    return method


class _Counting:
    connect = _counted("connect")
    send_packed_command = _counted("send_packed_command")
    read_response = _counted("read_response")


class CountingConnection(_Counting, Connection):
    pass


class CountingUnixConnection(_Counting, UnixDomainSocketConnection):
    pass


class CountingConnectionPool(ConnectionPool):
    def __init__(self, connection_class: type = Connection, **kwargs: Any) -> None:
        counted = {Connection: CountingConnection, UnixDomainSocketConnection: CountingUnixConnection}
        super().__init__(connection_class=counted.get(connection_class, connection_class), **kwargs)
