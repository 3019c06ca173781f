"""Live updates over websockets: how many clients one web process serves, and how long an update
takes from a submission's 2xx response to the client.

One uvicorn process (`--workers 1`) serves HTTP and websockets; a Celery worker and beat run as
`make run` runs them (beat's `boards.tasks.live_flush` is the trailing edge of coalescing). For
each client count, the bench opens that many sockets on `/ws/games/bench/boards/rating/?window=all`
(a share of them with a player token, the rest anonymous), then submits signed results, each a
new best score for one tokened player (so it enters the top 10 and moves every ranked player):

- quiet: one submission every --quiet-gap seconds: every update takes the leading edge;
- busy:  --busy-rate submissions a second for --seconds: most updates wait for the trailing edge
         (at most one update per board window per second).

It reports, per client count: sockets connected and how long connecting took, the web process's
CPU share and memory during the busy phase, and latency percentiles from the 2xx response to
(a) the submitting player's socket receiving its `rank` message with the new score and
(b) sampled anonymous sockets receiving a `top` message that contains the new score. A message
that arrives before the 2xx (the leading edge publishes before the response is written) counts as 0;
a message showing a later, higher score counts for the earlier submissions it superseded
(coalescing sends only the latest state): for `rank`, the player's own later score; for `top`, any
later score (every submission is a new best, so a top showing a score >= S reflects submission S).
"rank missed": submissions no rank message reflected.

The client runs on the same machine: its own CPU use is reported, since a saturated client
inflates latencies.

    .venv/bin/python -m bench.websockets [--clients 250,1000,2000] [--token-share 0.5] [--code REV]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench import cpu, environment
from bench.code import CodeTree, add_code_arg, run_benchmark
from bench.ingest import match
from bench.loadgen import HttpConnection, Request, signed_headers
from bench.machine import machine_info
from bench.report import markdown_table, ms, percentile, report_results
from bench.server import ServerProcess, background

GAME = environment.GAME_SLUG
BOARD = "rating"
SEED_SCORE = (90_000, 100_000)  # a narrow band: later top scores stay plausible to the anti-cheat rules
CONNECT_CONCURRENCY = 100
TOP_SAMPLE = 50  # anonymous sockets whose top messages are checked (every socket receives them)
SETTLE_SECONDS = 4.0
OVERLOADED_RETRY_SECONDS = 30.0  # after the last submission: the trailing edge and its fan-out


@dataclass
class Client:
    player: str | None
    ws: Any = None
    sample: bool = False
    ranks: dict[int, float] = field(default_factory=dict)  # score -> first receipt
    tops: list[tuple[float, int]] = field(default_factory=list)  # (receipt, best score shown)
    messages: int = 0
    task: asyncio.Task | None = None


async def _listen(client: Client) -> None:
    async for raw in client.ws:
        now = time.monotonic()
        client.messages += 1
        if client.player is None and not client.sample:
            continue  # received and decoded by the websocket library; nothing to look up
        message = json.loads(raw)
        if message["type"] == "rank" and message["score"] is not None:
            client.ranks.setdefault(message["score"], now)
        elif message["type"] == "top" and client.sample and message["entries"]:
            client.tops.append((now, max(e["score"] for e in message["entries"])))


async def _open(url: str, client: Client, gate: asyncio.Semaphore) -> None:
    import websockets

    async with gate:
        client.ws = await websockets.connect(url, max_queue=None, open_timeout=60, ping_interval=None)
        await client.ws.recv()  # the top on connect
        if client.player is not None:
            await client.ws.recv()  # the rank on connect
    client.task = asyncio.ensure_future(_listen(client))


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Submitter:
    def __init__(self, port: int, key: environment.ServerKey) -> None:
        self.conn = HttpConnection("127.0.0.1", port)
        self.key = key
        self.count = 0
        self.overloaded = 0  # 503s retried
        self.statuses: Counter[str] = Counter()

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST, the same body again while the service answers 503 `overloaded` (admission
        control: nothing was stored), for up to OVERLOADED_RETRY_SECONDS."""
        data = json.dumps(body).encode()
        headers = signed_headers(self.key, "POST", path, data)
        deadline = time.monotonic() + OVERLOADED_RETRY_SECONDS
        while True:
            response = await self.conn.request(Request("POST", path, data, headers=headers))
            reply = json.loads(response.body or b"{}")
            if response.status != 503 or time.monotonic() > deadline:
                return response.status, reply
            self.overloaded += 1
            await asyncio.sleep(0.1)

    async def result(self, player: str, score: int) -> float:
        """Submit one result; the monotonic time its 2xx arrived."""
        self.count += 1
        body = match(f"ws-{os.getpid()}-{self.count}-{time.time_ns()}", player, BOARD, score)
        status, reply = await self.post(f"/api/v1/games/{GAME}/matches", body)
        done = time.monotonic()
        if status // 100 != 2:
            raise environment.BenchError(f"submission answered {status}: {reply}")
        self.statuses[reply.get("status", "?")] += 1
        return done


async def _seed(sub: Submitter, players: int) -> None:
    rng = random.Random(7)
    for start in range(0, players, 1000):
        matches = [
            match(f"seed-{i}", f"p{i}", BOARD, rng.randint(*SEED_SCORE))
            for i in range(start + 1, min(start + 1000, players) + 1)
        ]
        status, reply = await sub.post(f"/api/v1/games/{GAME}/matches/batch", {"matches": matches})
        if status != 200:
            raise environment.BenchError(f"seeding answered {status}: {reply}")


def _tokens(env: environment.BenchEnv, players: int) -> list[str]:
    env.setup_django()
    from scores.models import Player
    from scores.services import player_token_issue

    by_id = {p.external_id: p for p in Player.objects.filter(game__slug=GAME)}
    return [player_token_issue(player=by_id[f"p{i}"])[0] for i in range(1, players + 1)]


def _latencies(samples: list[float]) -> dict[str, Any]:
    values = sorted(max(0.0, s) for s in samples)
    return {
        "n": len(values),
        "before_2xx": sum(1 for s in samples if s < 0),
        "p50_ms": ms(percentile(values, 50)),
        "p99_ms": ms(percentile(values, 99)),
        "max_ms": ms(values[-1]) if values else None,
    }


async def _phase(
    sub: Submitter, clients: list[Client], next_score: list[int], count: int, gap: float, rng: random.Random
) -> dict[str, Any]:
    players = [c for c in clients if c.player is not None]
    sent: list[tuple[Client, int, float]] = []
    started = time.monotonic()
    for i in range(count):
        target = started + i * gap
        if (delay := target - time.monotonic()) > 0:
            await asyncio.sleep(delay)
        client = rng.choice(players)
        next_score[0] += 1
        sent.append((client, next_score[0], await sub.result(client.player, next_score[0])))
    await asyncio.sleep(SETTLE_SECONDS)
    sampled = [c for c in clients if c.sample]
    rank, top, missed = [], [], 0
    for client, score, done in sent:
        # a later, higher score of the same player may supersede this one within one update
        seen = [t for s, t in client.ranks.items() if s >= score]
        if seen:
            rank.append(min(seen) - done)
        else:
            missed += 1
        for s in sampled:
            # scores only grow: the first top showing this score or a later one reflects this submission
            shown = next((t for t, best in s.tops if best >= score), None)
            if shown is not None:
                top.append(shown - done)
    return {
        "submissions": count,
        "seconds": round(time.monotonic() - started - SETTLE_SECONDS, 2),
        "rank": _latencies(rank),
        "rank_missed": missed,
        "top": _latencies(top),
    }


async def _step(
    args: argparse.Namespace, server: ServerProcess, sub: Submitter, tokens: list[str], n: int, next_score: list[int]
) -> dict:
    rng = random.Random(n)
    tokened = min(int(n * args.token_share), len(tokens))
    base = f"ws://127.0.0.1:{server.port}/ws/games/{GAME}/boards/{BOARD}/?window=all"
    clients = [Client(player=f"p{i + 1}") for i in range(tokened)] + [Client(player=None) for _ in range(n - tokened)]
    for c in [c for c in clients if c.player is None][:TOP_SAMPLE]:
        c.sample = True
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    environment.log(f"{n} clients: connecting ({tokened} with a token)")
    t0 = time.monotonic()
    opening = [
        asyncio.ensure_future(_open(base + (f"&token={tokens[i]}" if c.player else ""), c, gate))
        for i, c in enumerate(clients)
    ]
    results = await asyncio.gather(*opening, return_exceptions=True)
    connect_s = time.monotonic() - t0
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        environment.log(f"{len(failed)} sockets failed to open, e.g. {failed[0]!r}")
    clients = [c for c in clients if c.task is not None]
    environment.log(f"{n} clients: quiet phase ({args.quiet} submissions, one every {args.quiet_gap} s)")
    quiet = await _phase(sub, clients, next_score, args.quiet, args.quiet_gap, rng)
    environment.log(f"{n} clients: busy phase ({args.busy_rate}/s for {args.seconds} s)")
    cpu0, wall0, client0 = cpu.process_seconds(server.pid), time.monotonic(), _client_cpu()
    busy = await _phase(sub, clients, next_score, int(args.busy_rate * args.seconds), 1 / args.busy_rate, rng)
    wall = time.monotonic() - wall0
    server_cpu = (cpu.process_seconds(server.pid) - cpu0) / wall
    client_cpu = (_client_cpu() - client0) / wall
    rss = cpu.rss_bytes(server.pid) / 2**20
    messages = sum(c.messages for c in clients)
    for c in clients:
        with contextlib.suppress(Exception):
            await c.ws.close()
        if c.task:
            c.task.cancel()
    environment.log(f"submission statuses so far: {dict(sub.statuses)}")
    return {
        "clients": n,
        "tokened": tokened,
        "connected": len(clients),
        "connect_seconds": round(connect_s, 2),
        "server_cpu_share_busy": round(server_cpu, 3),
        "client_cpu_share_busy": round(client_cpu, 3),
        "server_rss_mb": round(rss, 1),
        "messages_received": messages,
        "quiet": quiet,
        "busy": busy,
    }


def render(steps: list[dict[str, Any]]) -> str:
    phases = [(phase, kind) for phase in ("quiet", "busy") for kind in ("rank", "top")]
    rows = [
        [
            f"{s['connected']}/{s['clients']}",
            s["connect_seconds"],
            f"{s['server_cpu_share_busy'] * 100:.0f}%",
            f"{s['client_cpu_share_busy'] * 100:.0f}%",
            s["server_rss_mb"],
            *(f"{s[phase][kind]['p50_ms']} / {s[phase][kind]['p99_ms']}" for phase, kind in phases),
            s["quiet"]["rank_missed"] + s["busy"]["rank_missed"],
        ]
        for s in steps
    ]
    headers = ["sockets", "connect s", "web CPU (busy)", "client CPU", "web RSS MB"]
    headers += [f"{phase} {kind} p50/p99 ms" for phase, kind in phases]
    return markdown_table([*headers, "rank missed"], rows)


def run(args: argparse.Namespace, env: environment.BenchEnv, code: CodeTree) -> int:
    started = datetime.now(UTC)
    environment.log("preparing the bench database (migrate, apply bench/game.toml)")
    environment.prepare_database(env)
    with environment.redis_client(env) as r:
        environment.flush_redis(r)
    key = environment.create_server_key(env)
    players = max(1000, int(max(args.clients) * args.token_share))
    extra = {"LIVE_INTERVAL_SECONDS": str(args.interval)}
    steps: list[dict[str, Any]] = []
    with ServerProcess("uvicorn", env, workers=1, extra_env=extra) as server, background(env, extra):

        async def seed() -> None:
            sub = Submitter(server.port, key)
            environment.log(f"seeding {players} players")
            await _seed(sub, players)
            await sub.conn.close()

        async def measure(tokens: list[str]) -> None:
            sub = Submitter(server.port, key)
            next_score = [SEED_SCORE[1]]  # each submission a new best by one point: plausible to anti-cheat
            for n in args.clients:
                steps.append(await _step(args, server, sub, tokens, n, next_score))
                environment.log(json.dumps(steps[-1]))
            environment.log(f"submission statuses: {dict(sub.statuses)}")
            await sub.conn.close()

        asyncio.run(seed())
        asyncio.run(measure(_tokens(env, players)))
        with environment.connect(env) as pg, environment.redis_client(env) as r:
            machine = machine_info(pg, r)
    table = render(steps)
    report_results("websockets", table, started=started, machine=machine, code=code, args=args, steps=steps)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.websockets", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add(
        "--clients",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[250, 1000, 2000],
        help="comma-separated socket counts (default 250,1000,2000)",
    )
    add("--token-share", type=float, default=0.5, help="share of sockets with a player token (default %(default)s)")
    add("--quiet", type=int, default=8, help="submissions in the quiet phase (default %(default)s)")
    add("--quiet-gap", type=float, default=1.5, help="seconds between quiet submissions (default %(default)s)")
    add("--busy-rate", type=float, default=20.0, help="submissions a second when busy (default %(default)s)")
    add("--seconds", type=float, default=10.0, help="the busy phase, the measured one (default %(default)s)")
    add("--interval", type=float, default=0.75, help="LIVE_INTERVAL_SECONDS of the server (default %(default)s)")
    add_code_arg(parser)
    return run_benchmark(parser.parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
