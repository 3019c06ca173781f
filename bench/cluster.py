"""The ranking index on one Redis against the project-local Redis Cluster (docs/BENCHMARKS.md,
"Redis Cluster: sharded boards").

    .venv/bin/python -m bench.cluster [--tail 1000000,10000000] [--only fanout,tail,kill] [--code REV|DIR]

In process (Django set up here; the load thread applies each accepted submission itself with the
projector's `pending_apply`, so no projector process runs), where the suite runs (the bench database,
created afresh, and the bench Redis db, under the benchmarks' lock), and on the cluster
scripts/cluster.py starts under .local/cluster/ (3 masters, 3 replicas; the only servers it
kills). Three scenarios, printed as they finish:

1. fanout: the real write path (boards.services.values_write, five windows per result, batches
   of 100) and reads (a player's rank with around=0 and 2, a top-10 page), on one Redis with an
   unsharded board and on the cluster with 4 shards; µs per operation, beside a raw pipelined
   ZADD GT of the same values on the same server (ratio = cost / anchor).
2. tail: N members over 4 shards, the stored histogram (boards.histogram) built, then 2000
   random members: the estimate's error against the true rank (max, p99, in places and in percent
   of the rank), its stated bound (rank_error), and how often the error exceeded it (must be 0).
3. kill: signed submissions through the API (Django's test client) for --seconds; at 30 % the
   primary serving shard 0 of the board is SIGKILLed while the beat's sync_pending runs every
   second. Prints accepted, refused, lost (accepted values not in the index after the last
   drains), when the slot was served again and when every value was back in the index. The
   killed node is restarted (it rejoins as a replica).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import environment, ingest, loadgen
from bench.environment import CodeTree, add_code_arg, run_benchmark

WINDOWS = ["all", "daily:2026-11-28", "weekly:2026-W48", "monthly:2026-11", "season:s1"]


def log(message: str) -> None:
    print(message, flush=True)


def use(topology: str, url: str) -> None:
    """Point the index at one Redis ("one") or at the cluster, both emptied."""
    from django.conf import settings
    from redis.cluster import RedisCluster

    from boards import index
    from rediskit.client import get_redis
    from scores.selectors import config_cache_clear

    settings.REDIS_CLUSTER_URL = url if topology == "cluster" else ""
    index.clients_reset()
    get_redis().flushdb()
    if topology == "cluster":
        index.index().flushall(target_nodes=RedisCluster.PRIMARIES)
    index.mark_built("bench")
    config_cache_clear()


def game(slug: str, shards: int, players: int) -> tuple[Any, list[tuple[int, int]], environment.ServerKey]:
    """A fresh game (values are PROTECTed) with one five-window board of `shards` shards and
    `players` players with a value in "all": its config, (pk, encoded) per player, a server key."""
    from scores import encoding
    from scores.config import parse_game_config
    from scores.models import Board, Game, Player, PlayerValue
    from scores.selectors import cached_board
    from scores.services import game_config_apply, server_key_create

    slug = f"{slug}-{int(time.time()) % 1_000_000}"
    text = (
        f'[game]\nslug = "{slug}"\nname = "{slug}"\n[[seasons]]\nslug = "s1"\nname = "S1"\n'
        'starts_at = "2026-11-01T00:00:00Z"\nends_at = "2027-02-01T00:00:00Z"\n'
        '[[boards]]\nslug = "rating"\nname = "Rating"\nmax_score = 1000000\n'
        f'windows = ["all", "daily", "weekly", "monthly", "season"]\nshards = {shards}\n'
    )
    game_config_apply(parse_game_config(text))
    g = Game.objects.get(slug=slug)
    board = Board.objects.get(game=g)
    Player.objects.bulk_create([Player(game=g, external_id=f"p{i}") for i in range(players)], batch_size=5000)
    pks = list(Player.objects.filter(game=g).values_list("pk", flat=True))
    at = datetime(2026, 11, 28, 12, tzinfo=UTC)
    cfg = cached_board(slug, board_slug="rating")
    values = [
        PlayerValue(
            board=board,
            window="all",
            player_id=pk,
            value=v,
            encoded=encoding.encode(cfg, v, at),
            reached_at=at,
            latest_at=at,
        )
        for pk, v in zip(pks, [random.randint(0, 1_000_000) for _ in pks], strict=True)
    ]
    PlayerValue.objects.bulk_create(values, batch_size=5000)
    key, secret = server_key_create(game=g, name="bench", scopes=("submit",))
    return cfg, [(pv.player_id, pv.encoded) for pv in values], environment.ServerKey(key.key_id, secret)


def timed(fn: Callable[[int], Any], n: int) -> float:
    """µs per call of fn(0), fn(1), ... fn(n - 1)."""
    started = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - started) / n * 1e6


def fanout(url: str, players: int) -> None:
    log(f"\n== fan-out: {players:,} players, 5 windows per result, batches of 100 ==")
    log(
        "topology          | write µs/result | anchor ZADD µs/result | ratio | rank around=0 µs | around=2 µs | top-10 µs"
    )
    for topology, shards in (("one", 1), ("cluster", 4)):
        _fanout_one(url, topology, shards, players)


def _fanout_one(url: str, topology: str, shards: int, players: int) -> None:
    from boards import index, selectors, services
    from rediskit import keys

    use(topology, url)
    cfg, values, _ = game(f"bench-{topology}", shards, players)
    services.values_write([(cfg.id, "all", pk, e) for pk, e in values])

    def write(i: int) -> None:
        chunk = values[(i * 100) % len(values) :][:100]
        services.values_write([(cfg.id, w, pk, e + 1) for pk, e in chunk for w in WINDOWS])

    def anchor(i: int) -> None:
        # the same ZADD GTs, grouped per sorted set as the real path groups them, without the
        # real path's Python (shard routing, expiries, write counters, the outbox marker)
        chunk = values[(i * 100) % len(values) :][:100]
        grouped: dict[str, dict[str, int]] = {}
        for w in WINDOWS:
            for pk, e in chunk:
                grouped.setdefault(keys.player_key(cfg.id, w, shards, pk), {})[str(pk)] = e + 2
        pipe = index.pipeline(transaction=False)
        for key, mapping in grouped.items():
            pipe.zadd(key, mapping, gt=True)
        pipe.execute()

    w_us = timed(write, 40) / 100
    a_us = timed(anchor, 40) / 100
    sample = random.sample([pk for pk, _ in values], 500)
    for pk in sample:  # warm the profile caches, as a serving process is
        selectors.player_standing(cfg, window="all", pk=pk, around=2)
    r0 = timed(lambda i: selectors.player_standing(cfg, window="all", pk=sample[i % 500], around=0), 1000)
    r2 = timed(lambda i: selectors.player_standing(cfg, window="all", pk=sample[i % 500], around=2), 1000)
    top = timed(lambda i: selectors.board_top(cfg, window="all", offset=0, limit=10), 500)
    label = f"{topology} ({shards} shard{'s' if shards > 1 else ''})"
    log(f"{label:17} | {w_us:15.1f} | {a_us:21.1f} | {w_us / a_us:5.2f} | {r0:16.0f} | {r2:11.0f} | {top:9.0f}")


def tail(url: str, n: int) -> None:
    from django.conf import settings

    from boards import histogram, index
    from rediskit import keys
    from scores import encoding
    from scores.selectors import BoardConfig

    settings.REDIS_SOCKET_TIMEOUT = 30.0  # loading millions of members: a node may stall on memory
    use("cluster", url)
    cfg = BoardConfig(
        id=900_000 + n % 1000,
        slug="tail",
        name="tail",
        game_id=0,
        game_slug="tail",
        reset_timezone="UTC",
        order="desc",
        mode="best",
        windows=("all",),
        min_score=0,
        max_score=16_000_000,
        max_total=None,
        rank_display="unique",
        seasons=(),
        shards=4,
    )
    started = time.perf_counter()
    base = datetime(2026, 11, 1, tzinfo=UTC)
    chunk = 20_000
    for lo in range(0, n, chunk):
        pipe = index.pipeline(transaction=False)
        by_key: dict[str, dict[str, int]] = {}
        for member in range(lo, min(n, lo + chunk)):
            v = min(16_000_000, int(random.expovariate(1 / 50_000)))
            e = encoding.encode(cfg, v, base + timedelta(seconds=random.randrange(30 * 86400)))
            by_key.setdefault(keys.player_key(cfg.id, "all", 4, member), {})[str(member)] = e
        for key, mapping in by_key.items():
            pipe.zadd(key, mapping)
        pipe.execute()
    loaded = time.perf_counter() - started
    t = time.perf_counter()
    h = histogram.histogram_build(cfg, "all")
    built = time.perf_counter() - t
    set_keys = keys.shard_keys(cfg.id, "all", 4)
    errors, percents, bounds, over = [], [], [], 0
    for _ in range(2000):
        member = random.randrange(n)
        e = int(index.index().zscore(keys.player_key(cfg.id, "all", 4, member), str(member)))
        true = 1 + sum(int(x) for x in index.batch([("zcount", k, f"({e}", "+inf") for k in set_keys]))
        value = encoding.decode_value(cfg, e)
        err = abs(histogram.approximate_rank(h, value) - true)
        errors.append(err)
        percents.append(100 * err / true)
        bounds.append(next((b.count for b in h.buckets if b.min <= value <= b.max), 0))
        over += err > bounds[-1]

    def p99(xs: list[float]) -> float:
        return statistics.quantiles(xs, n=100)[98]

    log(f"\n== tail estimate: {n:,} members over 4 shards, {len(h.buckets)} buckets ==")
    log(f"loaded in {loaded:.1f} s, histogram built in {built * 1000:.0f} ms; 2000 random members")
    log(f"error, places:  max {max(errors):,}  p99 {p99(errors):,.0f}  median {statistics.median(errors):,.0f}")
    log(f"error, percent of the true rank:  max {max(percents):.3f}%  p99 {p99(percents):.3f}%")
    log(f"stated bound (rank_error):  max {max(bounds):,}  p99 {p99(bounds):,.0f};  error > bound: {over}")
    for key in set_keys:
        index.index().delete(key)


def primary_killed(url: str, seconds: float) -> None:
    from django.test import Client
    from redis.cluster import RedisCluster

    from boards import index, tasks
    from rediskit import keys
    from scores.models import PlayerValue
    from scores.projection import pending_apply
    from scripts import cluster

    use("cluster", url)
    cfg, _, key = game("bench-kill", 4, 0)
    path = f"/api/v1/games/{cfg.game_slug}/matches"
    client = Client()
    accepted: list[str] = []
    errors: list[int] = []
    stop = threading.Event()

    def load() -> None:
        from django.db import connection

        i = 0
        while not stop.is_set():
            body = json.dumps(ingest.match(f"k{i}", f"k{i}", "rating", i % 1000, "2026-11-28T12:00:00Z")).encode()
            headers = dict(loadgen.signed_headers(key, "POST", path, body))
            status = client.post(path, body, content_type="application/json", headers=headers).status_code
            (accepted if status in (200, 201) else errors).append(f"k{i}" if status < 300 else status)
            if status < 300:
                pending_apply()  # the projector's part, in this thread (no projector process here)
            i += 1
            time.sleep(0.01)
        connection.close()

    def missing() -> int:
        """Values Postgres holds that the index lacks, or holds otherwise."""
        values = dict(PlayerValue.objects.filter(board_id=cfg.id, window="all").values_list("player_id", "encoded"))
        by_key: dict[str, list[int]] = {}
        for pk in values:
            by_key.setdefault(keys.player_key(cfg.id, "all", 4, pk), []).append(pk)
        replies = index.batch([("zmscore", k, [str(m) for m in ms]) for k, ms in by_key.items()])
        bad = 0
        for ms, scores in zip(by_key.values(), replies, strict=True):
            bad += sum(1 for m, s in zip(ms, scores, strict=True) if s is None or int(float(s)) != values[m])
        return bad

    r = index.index()
    assert isinstance(r, RedisCluster)
    slot = r.keyslot(keys.board_key(cfg.id, "all", 0))
    port = int(r.nodes_manager.get_node_from_slot(slot).port)
    thread = threading.Thread(target=load)
    thread.start()
    time.sleep(seconds * 0.3)
    pid = cluster.node_pid(port)
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    log(f"\n== primary killed: SIGKILL of the primary on port {port} (pid {pid}) under signed load ==")
    recovered = failover = None
    while time.monotonic() - killed <= seconds * 0.7:
        time.sleep(1.0)
        try:
            tasks.sync_pending()
        except Exception as exc:  # the beat's run fails while the slot has no primary; the next one retries
            log(f"  sync_pending: {type(exc).__name__}")
        if failover is None and _slot_served(cluster, [p for p in cluster.cluster_ports() if p != port][0], slot, port):
            failover = time.monotonic() - killed
        if recovered is None and failover is not None:
            try:  # checked under the load: a value committed a moment ago may still be on its way
                if missing() == 0:
                    recovered = time.monotonic() - killed
            except Exception:
                pass
    stop.set()
    thread.join()
    for _ in range(30):  # the last drains after the load
        if missing() == 0:
            break
        time.sleep(1.0)
        tasks.sync_pending()
    lost = missing()
    cluster.start_node(port)  # rejoins as a replica of its promoted one
    log(
        f"accepted {len(accepted)}, refused or failed {len(errors)} ({sorted(set(errors))}), lost {lost}; "
        f"slot served by the promoted replica after {failover if failover is None else round(failover, 1)} s, every accepted value "
        f"in the index {recovered if recovered is None else round(recovered, 1)} s after the kill"
    )


def _slot_served(cluster: Any, ask: int, slot: int, dead: int) -> bool:
    """Whether, as node `ask` sees it, a live primary other than `dead` serves `slot`."""
    for line in cluster._cli(ask, "cluster", "nodes").splitlines():
        parts = line.split()
        if len(parts) < 9 or "master" not in parts[2] or "fail" in parts[2] or f":{dead}@" in parts[1]:
            continue
        for span in parts[8:]:
            lo, _, hi = span.partition("-")
            if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                return True
    return False


def run(args: argparse.Namespace, env: environment.BenchEnv, code: CodeTree) -> int:
    environment.prepare_database(env)
    env.setup_django()
    from scripts import cluster

    url = cluster.ensure_cluster()
    only = set(args.only.split(","))
    log(f"bench.cluster on {os.uname().nodename}, {os.cpu_count()} cores; cluster {url}")
    if "fanout" in only:
        fanout(url, args.players)
    if "tail" in only:
        for n in (int(x) for x in args.tail.split(",") if x):
            tail(url, n)
    if "kill" in only:
        primary_killed(url, args.seconds)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=20_000, help="players of fanout (default %(default)s)")
    parser.add_argument("--tail", default="1000000", help="members of tail, comma-separated (default %(default)s)")
    parser.add_argument("--seconds", type=float, default=20.0, help="the load of kill (default %(default)s)")
    parser.add_argument("--only", default="fanout,tail,kill", help="scenarios (default %(default)s)")
    add_code_arg(parser)
    return run_benchmark(parser.parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
