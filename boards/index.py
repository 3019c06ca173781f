"""The Redis of the ranking index: the boards' sorted sets, their scripts, histograms and the
index's built marker.

With REDIS_CLUSTER_URL set, a Redis Cluster (redis-py's RedisCluster, which learns the slots
from any node and follows MOVED and failovers); unset, the one Redis of REDIS_URL, as before
(boards/redis.get_redis, behind the circuit breaker). REDIS_URL always keeps the Celery broker,
the channel layer, the cache, the outbox bookkeeping and the live-update state.

Every call that touches several board keys goes through batch(): one pipeline, which a
cluster client splits per node (every script touches one key, so one slot) and a plain
Redis runs in one round trip. A script a cluster node does not know yet (a node just promoted
or restarted empty) is loaded on every node and the batch retried once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from redis import Redis
from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError

from boards import keys
from boards.redis import BoardIndexNotBuilt, get_redis
from boards.scripts import LUA_DIR, script
from scores.selectors import cached_game_config_of_board

_clients: dict[tuple[str, bool], RedisCluster] = {}
_lock = threading.Lock()

Op = tuple[Any, ...]  # ("script", name, keys, args) or (method, *args) of a redis client


def is_cluster() -> bool:
    return bool(settings.REDIS_CLUSTER_URL)


def fanout(shards: int) -> bool:
    """Whether reads of a board with `shards` sorted sets take the fan-out path (boards/
    sharded.py): every sharded board, and every board on a cluster (whose scripts cannot
    check the built marker in the same call: it lives in another slot)."""
    return shards > 1 or is_cluster()


def _cluster(replicas: bool) -> RedisCluster:
    url = settings.REDIS_CLUSTER_URL
    client = _clients.get((url, replicas))
    if client is None:
        with _lock:
            client = _clients.get((url, replicas))
            if client is None:
                timeout = settings.REDIS_SOCKET_TIMEOUT
                client = RedisCluster.from_url(
                    url,
                    socket_timeout=timeout,
                    socket_connect_timeout=timeout,
                    read_from_replicas=replicas,
                    require_full_coverage=False,
                )
                _clients[(url, replicas)] = client
    return client


def index(*, replicas: bool = False) -> Redis | RedisCluster:
    """The ranking index's client. `replicas`: a stale-tolerant read that may go to a replica
    (only with REDIS_READ_FROM_REPLICAS=1 on a cluster)."""
    if not is_cluster():
        return get_redis()
    return _cluster(replicas and settings.REDIS_READ_FROM_REPLICAS)


def clients_reset() -> None:
    """Forget the cluster clients (tests that restart nodes, settings changes)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()


def pipeline(*, transaction: bool = True, replicas: bool = False) -> Any:
    """A pipeline on the index: a MULTI on one Redis when asked for, a plain (per-node)
    pipeline on a cluster, where a transaction cannot span slots."""
    r = index(replicas=replicas)
    if isinstance(r, RedisCluster):
        return r.pipeline()
    return r.pipeline(transaction=transaction)


def _queue(pipe: Any, ops: Sequence[Op]) -> None:
    for op in ops:
        if op[0] == "script":
            _, name, k, a = op
            script(name)(keys=k, args=a, client=pipe)
        else:
            getattr(pipe, op[0])(*op[1:])


def _load_scripts(r: RedisCluster) -> None:
    for path in sorted(LUA_DIR.glob("*.lua")):
        source = path.read_text()
        for node in r.get_nodes():
            r.script_load(source, target_nodes=node)


def batch(ops: Sequence[Op], *, replicas: bool = False, transaction: bool = False) -> list[Any]:
    """Run ops in one pipeline; replies in order. Raises what the first failing op raised."""
    r = index(replicas=replicas)
    if not isinstance(r, RedisCluster):
        pipe = r.pipeline(transaction=transaction)
        _queue(pipe, ops)
        return pipe.execute()
    for attempt in range(2):
        pipe = r.pipeline()
        _queue(pipe, ops)
        replies = pipe.execute(raise_on_error=False)
        errors = [x for x in replies if isinstance(x, Exception)]
        if not errors:
            return replies
        if attempt == 0 and any(isinstance(x, NoScriptError) for x in errors):
            _load_scripts(r)
            continue
        raise errors[0]
    raise AssertionError("unreachable")


def built() -> bool:
    return bool(index().exists(keys.built_marker()))


def built_or_raise(flag: Any) -> None:
    """A fan-out read's EXISTS of the marker, asked in the same batch as the read."""
    if not flag:
        raise BoardIndexNotBuilt("the board index is being rebuilt")


def mark_built(value: str) -> None:
    index().set(keys.built_marker(), value)


def shards_of(board_id: int) -> int:
    """How many sorted sets each window of a board has (its configuration, cached a few
    seconds: re-sharding is a rebuild, docs/game-config.md)."""
    config = cached_game_config_of_board(board_id)
    if config is None:
        return 1
    board = next((b for b in config.boards.values() if b.id == board_id), None)
    return board.shards if board else 1
