"""The Redis connection every app uses (django-redis' pool for the default cache, behind the
circuit breaker of rediskit/breaker.py: settings.CACHES sets its connection class)."""

from __future__ import annotations

import logging

from django.conf import settings
from django_redis import get_redis_connection
from redis import Redis
from redis.exceptions import ClusterError, RedisClusterException
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from rediskit.breaker import RedisUnavailable

# What "Redis is unreachable" looks like to callers that degrade instead of failing
# (RedisUnavailable, the open breaker's refusal, is a RedisConnectionError).
# A Redis Cluster without a primary for a slot (failing over) answers CLUSTERDOWN (ClusterError),
# and redis-py gives up on a cluster it cannot map with RedisClusterException: both are down too.
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, OSError, ClusterError, RedisClusterException)


class BoardIndexNotBuilt(RedisConnectionError):
    """Redis answers but has not (re)built the index yet (its marker is missing: it restarted
    empty or was flushed). Readers treat it as Redis down and answer from Postgres, marked
    degraded, rather than serve a partial board as whole."""


class IndexMoving(RedisConnectionError):
    """A read of several round trips (a sharded board's) saw the player's value change between
    them on every try. Answered from Postgres, marked degraded, as with Redis down: never a guess
    that mixes two values."""


_client: tuple[object, Redis] | None = None


def get_redis() -> Redis:
    """One client per process (redis-py's clients are thread-safe and share django-redis' pool).
    django-redis builds a client per `caches` handle, and Django keeps a handle per thread and
    per asyncio context: one per websocket, about 16 kB each (docs/live.md, "Measuring"). A new
    settings.CACHES (override_settings) gets a new client."""
    global _client
    conf = settings.CACHES
    found = _client
    if found is None or found[0] is not conf:
        found = _client = (conf, get_redis_connection("default"))
    return found[1]


def log_unavailable(logger: logging.Logger, message: str, *args: object, exc: BaseException) -> None:
    """A caller's note that Redis was unreachable. The breaker has already said so once, at
    WARNING, when it opened: each refused call after that is DEBUG, not a line per request."""
    level = logging.DEBUG if isinstance(exc, RedisUnavailable | BoardIndexNotBuilt) else logging.INFO
    logger.log(level, message, *args, exc)
