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
(b) every anonymous socket receiving a `top` message that contains the new score (one figure per
submission and socket: p99 covers all the sockets, not a sample). A message
that arrives before the 2xx (the leading edge publishes before the response is written) counts as 0;
a message showing a later, higher score counts for the earlier submissions it superseded
(coalescing sends only the latest state): for `rank`, the player's own later score; for `top`, any
later score (every submission is a new best, so a top showing a score >= S reflects submission S).
"rank missed": submissions no rank message reflected.

The client runs on the same machine, its sockets spread over --client-processes processes (an
asyncio loop each) that record receipt times and hand them to the process submitting; "client CPU"
is their CPU and its own, summed (it can exceed 100%), since a saturated client inflates latencies.

    .venv/bin/python -m bench.websockets [--clients 250,1000,2000] [--token-share 0.5] [--client-processes 2]
        [--code REV]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import functools
import itertools
import json
import multiprocessing
import os
import random
import resource
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import Any

from bench import environment, monitor
from bench.environment import CodeTree, add_code_arg, run_benchmark
from bench.ingest import match
from bench.loadgen import HttpConnection, Request, signed_headers
from bench.report import machine_info, markdown_table, ms, percentile, report_results
from bench.server import ServerProcess, background

GAME = environment.GAME_SLUG
BOARD = "rating"
SEED_SCORE = (90_000, 100_000)  # a narrow band: later top scores stay plausible to the anti-cheat rules
CONNECT_CONCURRENCY = 100  # sockets opening at a time, over all the client processes
SETTLE_SECONDS = 4.0
OVERLOADED_RETRY_SECONDS = 30.0  # after the last submission: the trailing edge and its fan-out


@dataclass
class Client:
    player: str | None
    url: str
    ws: Any = None
    ranks: dict[int, float] = field(default_factory=dict)  # score -> first receipt
    tops: list[tuple[float, int]] = field(default_factory=list)  # (receipt, best score shown)
    messages: int = 0
    task: asyncio.Task | None = None


@functools.lru_cache(maxsize=16)
def _top_best(raw: str) -> int | None:
    """The best score a `top` message shows. Every socket of a process receives the same text of
    an update's top: it is decoded once."""
    message = json.loads(raw)
    if message["type"] != "top" or not message["entries"]:
        return None
    return max(e["score"] for e in message["entries"])


async def _listen(client: Client) -> None:
    async for raw in client.ws:
        # CLOCK_MONOTONIC is system-wide on Linux: receipts compare with the parent's 2xx times
        now = time.monotonic()
        client.messages += 1
        if client.player is None:
            if (best := _top_best(raw)) is not None:
                client.tops.append((now, best))
        elif (message := json.loads(raw))["type"] == "rank" and message["score"] is not None:
            client.ranks.setdefault(message["score"], now)


async def _open(client: Client, gate: asyncio.Semaphore) -> None:
    import websockets

    async with gate:
        client.ws = await websockets.connect(client.url, max_queue=None, open_timeout=60, ping_interval=None)
        await client.ws.recv()  # the top on connect
        if client.player is not None:
            await client.ws.recv()  # the rank on connect
    client.task = asyncio.ensure_future(_listen(client))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _client_process(conn: Connection, jobs: list[tuple[str | None, str]], concurrency: int) -> None:
    """A client process: opens its sockets ((player or None, URL) each), says which opened, then
    answers each "collect" with what they received since the previous one, until "close"."""
    asyncio.run(_serve(conn, [Client(player, url) for player, url in jobs], concurrency))


async def _serve(conn: Connection, clients: list[Client], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)
    started = time.monotonic()
    results = await asyncio.gather(*(_open(c, gate) for c in clients), return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    clients = [c for c in clients if c.task is not None]
    conn.send(
        {
            "started": started,
            "finished": time.monotonic(),
            "players": [c.player for c in clients if c.player is not None],
            "connected": len(clients),
            "failed": len(failed),
            "failure": repr(failed[0]) if failed else None,
        }
    )
    while await asyncio.to_thread(conn.recv) == "collect":
        conn.send(
            {
                "cpu": _cpu(),
                "messages": sum(c.messages for c in clients),
                "ranks": {c.player: c.ranks for c in clients if c.player is not None},
                "tops": [c.tops for c in clients if c.player is None],
            }
        )
        for c in clients:
            c.ranks, c.tops = {}, []
    await asyncio.gather(*(c.ws.close() for c in clients), return_exceptions=True)
    conn.send("closed")


@dataclass
class Seen:
    """What the client processes received since the previous collect, merged."""

    cpu: float  # CPU seconds so far of the client processes and of this one (the submissions)
    messages: int  # so far
    ranks: dict[str, dict[int, float]]  # player -> score -> first receipt
    tops: list[list[tuple[float, int]]]  # per anonymous socket: (receipt, best score shown) of each top


class ClientProcesses:
    """The bench's sockets spread over processes, each with its own asyncio loop: one loop cannot
    read 15,000 messages an update in time. Spawned rather than forked, so a child starts without
    this process's event loop, database connections and server handles."""

    def __init__(self, jobs: list[tuple[str | None, str]], processes: int) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.conns: list[Connection] = []
        self.procs: list[multiprocessing.process.BaseProcess] = []
        for i in range(processes):
            ours, theirs = spawn.Pipe()
            concurrency = max(1, CONNECT_CONCURRENCY // processes)
            proc = spawn.Process(target=_client_process, args=(theirs, jobs[i::processes], concurrency), daemon=True)
            proc.start()
            theirs.close()  # so that a child that dies ends our recv() with EOFError
            self.conns.append(ours)
            self.procs.append(proc)

    async def replies(self, request: str | None = None) -> list[Any]:
        """Each child's answer to request (None: its next message unasked)."""
        for conn in self.conns:
            if request is not None:
                conn.send(request)
        return [await asyncio.to_thread(conn.recv) for conn in self.conns]

    async def collect(self) -> Seen:
        replies = await self.replies("collect")
        return Seen(
            cpu=_cpu() + sum(r["cpu"] for r in replies),
            messages=sum(r["messages"] for r in replies),
            ranks={player: ranks for r in replies for player, ranks in r["ranks"].items()},
            tops=[tops for r in replies for tops in r["tops"]],
        )

    async def close(self) -> None:
        await self.replies("close")

    def __enter__(self) -> ClientProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        for conn in self.conns:
            conn.close()  # a child still waiting for a request ends
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()


class Submitter:
    def __init__(self, port: int, key: environment.ServerKey) -> None:
        self.conn = HttpConnection("127.0.0.1", port)
        self.key = key
        self.count = 0
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


async def _submit(
    sub: Submitter, players: list[str], next_score: list[int], count: int, gap: float, rng: random.Random
) -> tuple[list[tuple[str, int, float]], float]:
    """count new bests, one every gap seconds, each of a random player, then a wait for their updates:
    (player, score, the monotonic time of its 2xx) of each, and the seconds the submissions took."""
    sent: list[tuple[str, int, float]] = []
    started = time.monotonic()
    for i in range(count):
        if (delay := started + i * gap - time.monotonic()) > 0:
            await asyncio.sleep(delay)
        player = rng.choice(players)
        next_score[0] += 1
        sent.append((player, next_score[0], await sub.result(player, next_score[0])))
    seconds = time.monotonic() - started
    await asyncio.sleep(SETTLE_SECONDS)
    return sent, seconds


def _phase(sent: list[tuple[str, int, float]], seconds: float, seen: Seen) -> dict[str, Any]:
    # Per anonymous socket, for bisect: the running maximum of the best score its tops showed, and
    # their receipt times. Scores only grow: the first top showing S or more reflects submission S.
    shown = [(list(itertools.accumulate((best for _, best in tops), max)), [t for t, _ in tops]) for tops in seen.tops]
    rank, top, missed = [], [], 0
    for player, score, done in sent:
        # a later, higher score of the same player may supersede this one within one update
        if ranked := [t for s, t in seen.ranks[player].items() if s >= score]:
            rank.append(min(ranked) - done)
        else:
            missed += 1
        for best, times in shown:
            if (i := bisect.bisect_left(best, score)) < len(times):
                top.append(times[i] - done)
    return {
        "submissions": len(sent),
        "seconds": round(seconds, 2),
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
    jobs = [(f"p{i + 1}", f"{base}&token={tokens[i]}") for i in range(tokened)] + [(None, base)] * (n - tokened)
    processes = min(args.client_processes, n)
    environment.log(f"{n} clients: connecting ({tokened} with a token) from {processes} processes")
    with ClientProcesses(jobs, processes) as clients:
        opened = await clients.replies()
        connect_s = max(o["finished"] for o in opened) - min(o["started"] for o in opened)
        if failed := sum(o["failed"] for o in opened):
            example = next(o["failure"] for o in opened if o["failure"])
            environment.log(f"{failed} sockets failed to open, e.g. {example}")
        players = [p for o in opened for p in o["players"]]
        environment.log(f"{n} clients: quiet phase ({args.quiet} submissions, one every {args.quiet_gap} s)")
        quiet = await _submit(sub, players, next_score, args.quiet, args.quiet_gap, rng)
        quiet_seen = await clients.collect()
        environment.log(f"{n} clients: busy phase ({args.busy_rate}/s for {args.seconds} s)")
        cpu0, wall0 = monitor.process_seconds(server.pid), time.monotonic()
        busy = await _submit(sub, players, next_score, int(args.busy_rate * args.seconds), 1 / args.busy_rate, rng)
        busy_seen = await clients.collect()
        wall = time.monotonic() - wall0
        server_cpu = (monitor.process_seconds(server.pid) - cpu0) / wall
        rss = monitor.rss_bytes(server.pid) / 2**20
        await clients.close()
    environment.log(f"submission statuses so far: {dict(sub.statuses)}")
    return {
        "clients": n,
        "tokened": tokened,
        "connected": sum(o["connected"] for o in opened),
        "connect_seconds": round(connect_s, 2),
        "client_processes": processes,
        "server_cpu_share_busy": round(server_cpu, 3),
        "client_cpu_share_busy": round((busy_seen.cpu - quiet_seen.cpu) / wall, 3),
        "server_rss_mb": round(rss, 1),
        "messages_received": busy_seen.messages,
        "quiet": _phase(*quiet, quiet_seen),
        "busy": _phase(*busy, busy_seen),
    }


def render(steps: list[dict[str, Any]]) -> str:
    phases = [(phase, kind) for phase in ("quiet", "busy") for kind in ("rank", "top")]
    rows = [
        [
            f"{s['connected']}/{s['clients']}",
            s["connect_seconds"],
            f"{s['server_cpu_share_busy'] * 100:.0f}%",
            f"{s['client_cpu_share_busy'] * 100:.0f}%",
            s["client_processes"],
            s["server_rss_mb"],
            *(f"{s[phase][kind]['p50_ms']} / {s[phase][kind]['p99_ms']}" for phase, kind in phases),
            s["quiet"]["rank_missed"] + s["busy"]["rank_missed"],
        ]
        for s in steps
    ]
    headers = ["sockets", "connect s", "web CPU (busy)", "client CPU", "client processes", "web RSS MB"]
    headers += [f"{phase} {kind} p50/p99 ms" for phase, kind in phases]
    return markdown_table([*headers, "rank missed"], rows)


def run(args: argparse.Namespace, env: environment.BenchEnv, code: CodeTree) -> int:
    started = datetime.now(UTC)
    environment.log("preparing the bench database (migrate, apply bench/game.toml)")
    environment.prepare_database(env)
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
    add(
        "--client-processes",
        type=int,
        default=2,
        help="processes holding the sockets, a loop each (default %(default)s: the reference machine's cores)",
    )
    add("--interval", type=float, default=0.75, help="LIVE_INTERVAL_SECONDS of the server (default %(default)s)")
    add_code_arg(parser)
    return run_benchmark(parser.parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
