"""The Redis connection every app uses (django-redis' pool for the default cache, behind the
circuit breaker of rediskit/breaker.py: settings.CACHES sets its connection class)."""

from __future__ import annotations

import logging
import os
import select
import threading
from typing import Any

from django.conf import settings
from django_redis import get_redis_connection
from redis import Redis
from redis.exceptions import ClusterError, RedisClusterException, ResponseError
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


# --- the hot reads' round trip ------------------------------------------------------------
#
# redis-py spends ~35 µs of CPU per command around the socket (measured on this machine kind:
# an EVALSHA 76 µs through `client.evalsha`, 40 µs sent on a connection held by the caller, a
# bare socket round trip 16 µs): the pool's checkout (a lock, a readiness poll, observability
# counters), the retry wrapper and the release. A player's rank read is one round trip, so
# that overhead was a tenth of its server CPU. The reads' scripts (rediskit/scripts.py) send on
# a connection the calling thread keeps for itself instead. It is made by the client's pool
# (same class: the breaker and the error counters apply, same server and timeouts), never
# shared between threads, forgotten in a forked child, and checked before each use the way
# the pool checks a connection it hands out: a socket that is readable before anything was
# sent was closed by the server (or holds a stray reply), so it is reconnected first.

_own = threading.local()


def _forget_own_after_fork() -> None:
    # the child's copy of the parent's socket must not be used (nor shut down: redis-py only
    # shuts down sockets of the process that opened them, so dropping it is safe)
    global _own
    _own = threading.local()


os.register_at_fork(after_in_child=_forget_own_after_fork)


def own_connection_command(client: Redis, *args: Any) -> Any:
    """`client.execute_command(*args)` on the calling thread's own connection to the client's
    server (see above). Raises what the pool's connection raises (REDIS_DOWN, ResponseError);
    after any failure but a Redis error reply, the connection is closed and the next call opens
    a new one. No retry: the breaker has tripped on a failure, as on the pool's path."""
    pool = client.connection_pool
    own = _own
    conn = getattr(own, "conn", None)
    if conn is None or own.pool is not pool:
        conn = own.conn = pool.connection_class(**pool.connection_kwargs)
        own.pool = pool
    sock = conn._sock
    if sock is not None:
        # poll, not select: a process holding thousands of websockets has descriptors past
        # select's limit of 1024
        ready = select.poll()
        ready.register(sock, select.POLLIN)
        if ready.poll(0):
            conn.disconnect()
    try:
        conn.send_packed_command(conn.pack_command(*args), check_health=False)
        return conn.read_response()
    except ResponseError:
        raise  # the reply was read whole: the connection is in step
    except BaseException:
        conn.disconnect()
        raise
