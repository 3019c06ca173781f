"""The Redis of the ranking index: the boards' sorted sets, their scripts, histograms and the
index's built marker.

With REDIS_CLUSTER_URL set, a Redis Cluster (redis-py's RedisCluster, which learns the slots
from any node and follows MOVED and failovers); unset, the one Redis of REDIS_URL, as before
(rediskit/client.get_redis, behind the circuit breaker). REDIS_URL always keeps the Celery broker,
the channel layer, the cache, the outbox bookkeeping and the live-update state.

Every call that touches several board keys goes through batch() or pipeline(): one pipeline
on a plain Redis (one round trip); on a cluster one plain pipeline per node, the commands
grouped by the node that serves their key's slot (every script touches one key, so one slot).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from redis import Redis
from redis.cluster import REPLICA, LoadBalancingStrategy, RedisCluster
from redis.exceptions import NoScriptError, ResponseError

from rediskit import keys
from rediskit.client import REDIS_DOWN, BoardIndexNotBuilt, get_redis
from rediskit.scripts import script
from scores import encoding
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
                    load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if replicas else None,
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
    """A pipeline on the index: a MULTI on one Redis when asked for; on a cluster a NodeBatch
    (one plain pipeline per node: a transaction cannot span slots, and redis-py's cluster
    pipeline refuses scripts)."""
    r = index(replicas=replicas)
    if isinstance(r, RedisCluster):
        return NodeBatch(replicas=replicas)
    return r.pipeline(transaction=transaction)


class NodeBatch:
    """Commands queued as on a pipeline (`batch.zadd(key, ...)`, `batch.script(name, keys,
    args)`), run by execute() as one plain pipeline per cluster node, replies in order. Every
    command's first argument is its key (scripts: their one key; execute_command: its second)."""

    def __init__(self, *, replicas: bool = False) -> None:
        self.replicas = replicas
        self.ops: list[tuple[str, tuple, dict]] = []

    def script(self, name: str, script_keys: Sequence[str], args: Sequence[Any]) -> NodeBatch:
        self.ops.append(("script", (name, list(script_keys), list(args)), {}))
        return self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def queue(*args: Any, **kwargs: Any) -> NodeBatch:
            self.ops.append((name, args, kwargs))
            return self

        return queue

    def __len__(self) -> int:
        return len(self.ops)

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        replicas = self.replicas and settings.REDIS_READ_FROM_REPLICAS
        return _run_on_nodes(_cluster(replicas), self.ops, replicas=replicas)


def zadd_flat(pipe: Any, key: str, flat: Sequence[Any]) -> None:
    """Queue `ZADD key score member score member ...` on a pipeline or a NodeBatch, its arguments
    already laid out as they go on the wire: for the rebuild, where redis-py's own pairing of a
    mapping costs more than reading the rows."""
    if isinstance(pipe, NodeBatch):
        pipe.ops.append(("zadd_flat", (key, flat), {}))
    else:
        pipe.execute_command("ZADD", key, *flat)


def _key_of(op: tuple[str, tuple, dict]) -> str:
    name, args, _ = op
    return args[1][0] if name == "script" else args[0]


def _queue(pipe: Any, ops: Sequence[tuple[str, tuple, dict]], *, by_sha: bool = False, read_only: bool = False) -> None:
    """Queue ops on a redis-py pipeline. `by_sha`: scripts by EVALSHA alone (EVALSHA_RO on a
    replica), for pipelines whose node has the scripts loaded: redis-py's own script call asks
    SCRIPT EXISTS first on every execute, one more round trip per node per read."""
    for name, args, kwargs in ops:
        if name == "script":
            script_name, k, a = args
            if by_sha:
                (pipe.evalsha_ro if read_only else pipe.evalsha)(script(script_name).sha, len(k), *k, *a)
            else:
                script(script_name)(keys=k, args=a, client=pipe)
        elif name == "zadd_flat":
            pipe.execute_command("ZADD", args[0], *args[1])
        else:
            getattr(pipe, name)(*args, **kwargs)


def _run_on_nodes(r: RedisCluster, ops: list[tuple[str, tuple, dict]], *, replicas: bool = False) -> list[Any]:
    """Group ops by the node serving their key's slot, run one pipeline per node, put the
    replies back in order. `replicas` (read-only ops, REDIS_READ_FROM_REPLICAS=1): a replica
    of the slot where there is one; its pipeline starts with READONLY and runs scripts with
    EVALSHA_RO. On an error (a node down, a slot moved by a failover) the slot map is
    refreshed for the next call and the error raised: callers degrade as for one Redis down."""
    strategy = LoadBalancingStrategy.ROUND_ROBIN_REPLICAS if replicas else None
    groups: dict[str, tuple[Any, list[int]]] = {}
    for i, op in enumerate(ops):
        node = r.nodes_manager.get_node_from_slot(r.keyslot(_key_of(op)), load_balancing_strategy=strategy)
        groups.setdefault(node.name, (node, []))[1].append(i)
    replies: list[Any] = [None] * len(ops)
    try:
        for node, positions in groups.values():
            conn = r.get_redis_connection(node)
            group = [ops[i] for i in positions]
            replica = node.server_type == REPLICA
            for attempt in range(2):
                pipe = conn.pipeline(transaction=False)
                if replica:
                    pipe.execute_command("READONLY")
                _queue(pipe, group, by_sha=True, read_only=replica)
                got = pipe.execute(raise_on_error=False)[1:] if replica else pipe.execute(raise_on_error=False)
                if attempt == 0 and any(isinstance(x, NoScriptError) for x in got):
                    # a node that never ran the script (just promoted, restarted empty): load, retry
                    for name in {op[1][0] for op in group if op[0] == "script"}:
                        conn.script_load(script(name).script)
                    continue
                break
            for i, reply in zip(positions, got, strict=True):
                if isinstance(reply, Exception):
                    raise reply
                replies[i] = reply
    except REDIS_DOWN + (ResponseError,):
        r.nodes_manager.initialize()
        raise
    return replies


def batch(ops: Sequence[Op], *, replicas: bool = False, transaction: bool = False) -> list[Any]:
    """Run ops (("script", name, keys, args) or (method, *args)) in one pipeline on one Redis,
    one per node on a cluster; replies in order. Raises what the first failing op raised."""
    queued = [("script", op[1:], {}) if op[0] == "script" else (op[0], op[1:], {}) for op in ops]
    r = index(replicas=replicas)
    if isinstance(r, RedisCluster):
        return _run_on_nodes(r, queued, replicas=replicas and settings.REDIS_READ_FROM_REPLICAS)
    pipe = r.pipeline(transaction=transaction)
    _queue(pipe, queued)
    return pipe.execute()


def built() -> bool:
    return bool(index().exists(keys.BUILT_MARKER))


def built_or_raise(flag: Any) -> None:
    """A fan-out read's EXISTS of the marker, asked in the same batch as the read."""
    if not flag:
        raise BoardIndexNotBuilt("the board index is being rebuilt")


def mark_built(value: str) -> None:
    index().set(keys.BUILT_MARKER, value)


def may_fall(board_id: int) -> bool:
    """Whether the board's values can go down on ingest (scores.encoding.may_fall): its writes
    are absolute, read from Postgres under a row lock (boards/services.py)."""
    config = cached_game_config_of_board(board_id)
    board = next((b for b in config.boards.values() if b.id == board_id), None) if config else None
    return board is not None and encoding.may_fall(board)


def shards_of(board_id: int) -> int:
    """How many sorted sets each window of a board has (its configuration, cached a few
    seconds: re-sharding is a rebuild, docs/game-config.md)."""
    config = cached_game_config_of_board(board_id)
    if config is None:
        return 1
    board = next((b for b in config.boards.values() if b.id == board_id), None)
    return board.shards if board else 1
