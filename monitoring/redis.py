"""The connection pool of the boards' and the cache's Redis (settings CACHES, django-redis'
CONNECTION_POOL_CLASS): redis-py's, with every failed connect, send and read counted in
leaderboard_redis_errors_total, whatever connection class the pool is given (the settings give
the breaker's, rediskit/breaker.py). TCP and unix-socket URLs alike. A call the open breaker
refuses without trying is not a failure of Redis and is not counted: the breaker's state is
what /healthz reports."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from redis.connection import Connection, ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from monitoring.metrics import REDIS_ERRORS
from rediskit.breaker import RedisUnavailable

_FAILURES = (RedisConnectionError, RedisTimeoutError, OSError)


def _counted(name: str) -> Callable[..., Any]:
    """The connection's method `name`, counting its failures."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(super(_Counting, self), name)(*args, **kwargs)
        except RedisUnavailable:
            raise
        except _FAILURES as exc:
            REDIS_ERRORS.labels(type(exc).__name__).inc()
            raise

    method.__name__ = name
    return method


class _Counting:
    connect = _counted("connect")
    send_packed_command = _counted("send_packed_command")
    read_response = _counted("read_response")


@cache
def counting(connection_class: type) -> type:
    """`connection_class` with its failures counted (one class per class, made once)."""
    if issubclass(connection_class, _Counting):
        return connection_class
    return type(f"Counting{connection_class.__name__}", (_Counting, connection_class), {})


class CountingConnectionPool(ConnectionPool):
    def __init__(self, connection_class: type = Connection, **kwargs: Any) -> None:
        super().__init__(connection_class=counting(connection_class), **kwargs)
