"""The raw ceiling the service's figures are compared with: Redis itself, through redis-benchmark
(Debian's redis-tools), on a sorted set as large as the board.

redis-benchmark's `__rand_int__` stands for a 12-digit, zero-padded random number below `-r`,
so the anchor set's members are exactly those strings (`000000000000` .. N-1): every ZREVRANK
finds its member, and every ZADD updates an existing one, as on a full board."""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import subprocess
import time
from typing import Any

import redis
from redis.connection import parse_url

from bench.environment import BenchEnv, BenchError, log, manage

ANCHOR_KEY = "bench:anchor:zset"  # not lb:*: reads.clear_caches removes it with the caches
ZADD_CHUNK = 10_000
PIPELINE_COMMANDS = 10


def load_anchor_set(r: redis.Redis, members: int, seed: int = 1) -> dict[str, Any]:
    """Fill ANCHOR_KEY with `members` members (pipelined ZADDs of ZADD_CHUNK, from this process):
    the raw load rate a rebuild is compared with, and the raw memory of such a set."""
    rng = random.Random(seed)
    r.unlink(ANCHOR_KEY)
    before = int(r.info("memory")["used_memory"])
    started = time.perf_counter()
    pipe = r.pipeline(transaction=False)
    for start in range(0, members, ZADD_CHUNK):
        chunk = range(start, min(members, start + ZADD_CHUNK))
        pipe.zadd(ANCHOR_KEY, {f"{i:012d}": rng.randrange(2**52) for i in chunk})
        if len(pipe) >= PIPELINE_COMMANDS:
            pipe.execute()
    pipe.execute()
    seconds = time.perf_counter() - started
    after = int(r.info("memory")["used_memory"])
    usage = int(r.memory_usage(ANCHOR_KEY, samples=0) or 0)
    return {
        "key": ANCHOR_KEY,
        "members": members,
        "load_seconds": round(seconds, 3),
        "entries_per_s": members / seconds,
        "bytes_per_member_used_memory": (after - before) / members,
        "bytes_per_member_memory_usage": usage / members,
    }


def redis_benchmark(
    redis_url: str, command: list[str], *, clients: int, requests: int, keyspace: int
) -> dict[str, Any]:
    """Run one redis-benchmark command against the bench Redis db; its rps and latency percentiles.

    One command per round trip (no -P), from `clients` connections: the same shape as the HTTP
    load, so "ratio to raw" reads as what the service costs on top of the Redis call it makes."""
    binary = shutil.which("redis-benchmark")
    if binary is None:
        raise BenchError("redis-benchmark not found: apt-get install redis-tools")
    url = parse_url(redis_url)  # unix:///path/redis.sock?db=N too
    if "path" in url:
        cmd = [binary, "-s", url["path"]]
    else:
        cmd = [binary, "-h", url.get("host", "127.0.0.1"), "-p", str(url.get("port", 6379))]
    if password := url.get("password"):
        cmd += ["-a", password, "--no-auth-warning"]
        if url.get("username"):
            cmd += ["--user", url["username"]]
    cmd += ["--dbnum", str(url.get("db", 0)), "-c", str(clients), "-n", str(requests), "-r", str(keyspace)]
    cmd += ["--csv", *command]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise BenchError(f"redis-benchmark failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    if not rows:
        raise BenchError(f"redis-benchmark printed no result: {proc.stdout[-300:]!r}")
    row = rows[-1]
    shown = [part if part != password else "***" for part in cmd]
    log(f"redis-benchmark {' '.join(command)}: {float(row['rps']):,.0f} req/s, p99 {row['p99_latency_ms']} ms")
    return {
        "command": " ".join(shown),
        "clients": clients,
        "requests": requests,
        "requests_per_s": float(row["rps"]),
        "latency_ms": {
            "p50": float(row["p50_latency_ms"]),
            "p95": float(row["p95_latency_ms"]),
            "p99": float(row["p99_latency_ms"]),
            "max": float(row["max_latency_ms"]),
            "mean": float(row["avg_latency_ms"]),
        },
    }


# Run by the measured code (manage.py shell): caches the player's friend list as a read would,
# and prints friends.lua's SHA with the KEYS and ARGV of that player's own friends read
# (boards.selectors.friends_call: the service's own spelling of them).
_FRIENDS_CALL = """
import json
from boards import profiles, selectors
from rediskit.client import get_redis
from rediskit.scripts import script
from scores.selectors import cached_board
board = cached_board({game!r}, board_slug={board!r})
profiles.friend_pks({pk})
keys, args = selectors.friends_call(board, window="all", members=[{pk}], own_list=True)
print(json.dumps({{"sha": get_redis().script_load(script("friends").script), "keys": keys, "args": [str(a) for a in args]}}))
"""


def friends_script(env: BenchEnv, *, game: str, board: str, pk: int, clients: int, requests: int) -> dict[str, Any]:
    """The friends read's raw anchor: friends.lua alone (EVALSHA through redis-benchmark, one call
    per round trip from `clients` connections) for player `pk`'s own friends, as the service
    sends it (no rate-limit counters, no token guard: their cost is the service's)."""
    out = manage(env, "shell", "-c", _FRIENDS_CALL.format(game=game, board=board, pk=pk))
    call = json.loads(out.strip().splitlines()[-1])
    command = ["EVALSHA", call["sha"], str(len(call["keys"])), *call["keys"], *call["args"]]
    figures = redis_benchmark(env.redis_url, command, clients=clients, requests=requests, keyspace=1)
    return {**figures, "player_pk": pk, "load": f"{clients} connections"}
