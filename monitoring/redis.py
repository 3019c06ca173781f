"""The connection pool of the boards' and the cache's Redis (settings CACHES, django-redis'
CONNECTION_POOL_CLASS): redis-py's, with every failed connect, send and read counted in
leaderboard_redis_errors_total. TCP and unix-socket URLs alike."""

from __future__ import annotations

from typing import Any

from redis.connection import Connection, ConnectionPool, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from monitoring.metrics import REDIS_ERRORS

_FAILURES = (RedisConnectionError, RedisTimeoutError, OSError)


class _Counting:
    def connect(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().connect(*args, **kwargs)
        except _FAILURES as exc:
            REDIS_ERRORS.labels(type(exc).__name__).inc()
            raise

    def send_packed_command(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().send_packed_command(*args, **kwargs)
        except _FAILURES as exc:
            REDIS_ERRORS.labels(type(exc).__name__).inc()
            raise

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except _FAILURES as exc:
            REDIS_ERRORS.labels(type(exc).__name__).inc()
            raise


class CountingConnection(_Counting, Connection):
    pass


class CountingUnixConnection(_Counting, UnixDomainSocketConnection):
    pass


class CountingConnectionPool(ConnectionPool):
    def __init__(self, connection_class: type = Connection, **kwargs: Any) -> None:
        counted = {Connection: CountingConnection, UnixDomainSocketConnection: CountingUnixConnection}
        super().__init__(connection_class=counted.get(connection_class, connection_class), **kwargs)
