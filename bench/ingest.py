"""Ingest throughput and latency of the signed submission API (contract sections 3 and 4).

    .venv/bin/python -m bench.ingest [--seconds 20] [--concurrency 32] [--batch-size 1000]
                                     [--players 1000000] [--servers uvicorn,gunicorn]
                                     [--scenarios single,batch] [--profile cpu|wall]

For each server (a subprocess, DEBUG=0, against the bench database and Redis db 2) and each
scenario, starting from empty score tables and an empty Redis db:
  single  POST /api/v1/games/bench/matches, one match of one result per request;
  batch   POST /api/v1/games/bench/matches/batch, --batch-size such matches per request;
then checks that every acknowledged match is in Postgres (durable) and that the board's `all`
sorted set holds exactly the values Postgres holds (mirrored). See bench/README.md.

Over 400 lines on purpose: the ingest scenarios and their durability and mirror checks, which the suite reuses.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
import redis

from bench import cpu, environment, loadgen, profiling
from bench.cli import add_run_args, bench_parser, check_run_args, csv_choices, run_benchmark
from bench.code import CodeTree
from bench.machine import machine_info, machine_line
from bench.monitor import ServerMonitor, run_load
from bench.report import RESULTS_DIR, RunInfo, markdown_table, percentile, report_results, utc_stamp
from bench.server import SERVERS, ServerProcess, background
from bench.tally import Tally, load_figures, log_errors

SCENARIOS = ("single", "batch")
MIRROR_WAIT_SECONDS = 5.0  # the contract allows 1 s; a little slack for a loaded machine
BUSY_WARNING = 0.2  # the machine's busy share before a scenario above which results are suspect


# --------------------------------------------------------------------------- workload


class MatchFactory:
    """Matches of one result each: a random player among p1..pN, ended now, with a score from
    `score(pk)` or else uniform within the board's bounds (on an empty board: every player new)."""

    def __init__(
        self,
        tag: str,
        board: environment.BoardInfo,
        players: int,
        rng: random.Random,
        score: Callable[[int], int] | None = None,
    ) -> None:
        self.tag = tag
        self.board = board
        self.players = players
        self.rng = rng
        self.score = score or (lambda pk: rng.randint(board.min_score, board.max_score))
        self.counter = itertools.count(1)

    def matches(self, n: int) -> list[dict[str, Any]]:
        ended_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        pks = [self.rng.randint(1, self.players) for _ in range(n)]
        return [
            {
                "match_id": f"{self.tag}-{next(self.counter)}",
                "ended_at": ended_at,
                "results": [{"player": f"p{pk}", "board": self.board.slug, "score": self.score(pk)}],
            }
            for pk in pks
        ]


@dataclass(frozen=True)
class Scenario:
    """What one request carries and how its answer is judged."""

    name: str
    path: str
    matches_per_request: int
    batch: bool  # a {"matches": [...]} body answered item by item, else one match

    def request(self, factory: MatchFactory) -> loadgen.Request:
        matches = factory.matches(self.matches_per_request if self.batch else 1)
        payload: Any = {"matches": matches} if self.batch else matches[0]
        body = json.dumps(payload, separators=(",", ":")).encode()
        return loadgen.Request("POST", self.path, body, context=[m["match_id"] for m in matches], tag=self.name)


# --------------------------------------------------------------------------- verification


APPLY_WAIT_SECONDS = 120.0  # the projector's backlog after a batch scenario on a loaded machine


def wait_applied(pg: psycopg.Connection) -> dict[str, Any]:
    """Wait until the projector has applied everything stored (scores_pending is empty): the
    values the checks compare are only final then. Returns how long it took after the load."""
    started = time.monotonic()
    while True:
        pending = pg.execute("SELECT count(*) FROM scores_pending").fetchone()[0]  # type: ignore[index]
        waited = time.monotonic() - started
        if not pending or waited >= APPLY_WAIT_SECONDS:
            return {"ok": not pending, "pending_rows": pending, "caught_up_after_s": round(waited, 2)}
        time.sleep(0.05)


class LagSampler:
    """Samples the projector's lag (the age of the oldest pending row, scores_pending) every
    `every` seconds on a connection of its own while a scenario runs: `with LagSampler(url):`."""

    def __init__(self, database_url: str, every: float = 0.1) -> None:
        self.database_url = database_url
        self.every = every
        self.lags: list[float] = []
        self.pending: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lag-sampler", daemon=True)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as pg:
            while not self._stop.wait(self.every):
                count, age = pg.execute(
                    "SELECT count(*), COALESCE(extract(epoch FROM clock_timestamp() - min(created_at)), 0) "
                    "FROM scores_pending"
                ).fetchone()  # type: ignore[misc]
                self.pending.append(int(count))
                self.lags.append(float(age))

    def report(self) -> dict[str, Any]:
        lags = sorted(self.lags)
        return {
            "samples": len(lags),
            "max_s": round(lags[-1], 3) if lags else None,
            "p99_s": round(percentile(lags, 99), 3) if lags else None,
            "p50_s": round(percentile(lags, 50), 3) if lags else None,
            "max_pending_rows": max(self.pending, default=None),
        }


def check_durable(pg: psycopg.Connection, game: int, acked: list[str]) -> dict[str, Any]:
    """Every acknowledged match is in scores_match (the tables were empty at the start)."""
    found = pg.execute(
        "SELECT count(*) FROM scores_match WHERE game_id = %s AND match_id = ANY(%s)", (game, acked)
    ).fetchone()[0]  # type: ignore[index]
    stored = pg.execute("SELECT count(*) FROM scores_match WHERE game_id = %s", (game,)).fetchone()[0]  # type: ignore[index]
    missing = len(set(acked)) - found
    return {"ok": missing == 0, "acked": len(set(acked)), "stored": stored, "missing": missing}


def _mirror_state(pg: psycopg.Connection, r: redis.Redis, board: environment.BoardInfo) -> dict[str, Any]:
    rows = pg.execute(
        "SELECT player_id, encoded FROM scores_playervalue WHERE board_id = %s AND \"window\" = 'all'", (board.id,)
    ).fetchall()
    in_postgres = {int(p): int(e) for p, e in rows}
    key = f"lb:{{{board.id}}}:all"  # rediskit/keys.py board_key()
    in_redis = {int(m): int(s) for m, s in r.zrange(key, 0, -1, withscores=True)}
    differing = sum(1 for p, e in in_postgres.items() if p in in_redis and in_redis[p] != e)
    outbox = pg.execute("SELECT count(*) FROM scores_boardoutbox").fetchone()[0]  # type: ignore[index]
    return {
        "key": key,
        "postgres_players": len(in_postgres),
        "redis_members": len(in_redis),
        "missing_in_redis": len(in_postgres.keys() - in_redis.keys()),
        "extra_in_redis": len(in_redis.keys() - in_postgres.keys()),
        "differing_scores": differing,
        "outbox_rows": outbox,
    }


def check_mirrored(pg: psycopg.Connection, r: redis.Redis, board: environment.BoardInfo) -> dict[str, Any]:
    """The board's `all` sorted set holds exactly Postgres' values: same members, same scores."""
    deadline = time.monotonic() + MIRROR_WAIT_SECONDS
    while True:
        state = _mirror_state(pg, r, board)
        state["ok"] = (
            state["postgres_players"] == state["redis_members"]
            and not state["missing_in_redis"]
            and not state["differing_scores"]
        )
        if state["ok"] or time.monotonic() >= deadline:
            return state
        time.sleep(0.5)


def durable_text(d: dict[str, Any]) -> str:
    return "ok" if d["ok"] else f"MISSING {d['missing']:,} of {d['acked']:,}"


def mirrored_text(m: dict[str, Any]) -> str:
    if m["ok"]:
        return "ok"
    return (
        f"MISMATCH pg={m['postgres_players']:,} redis={m['redis_members']:,} "
        f"differing={m['differing_scores']:,} outbox={m['outbox_rows']:,}"
    )


# --------------------------------------------------------------------------- one run


@dataclass
class Context:
    args: argparse.Namespace
    env: environment.BenchEnv
    key: environment.ServerKey
    pg: psycopg.Connection
    r: redis.Redis
    board: environment.BoardInfo
    game: int
    stamp: str
    tag: str


def run_scenario(ctx: Context, server: ServerProcess, scenario: Scenario) -> dict[str, Any]:
    args = ctx.args
    environment.reset_scores(ctx.pg)
    environment.flush_redis(ctx.r)
    factory = MatchFactory(f"{ctx.tag}-{server.name}-{scenario.name}", ctx.board, args.players, random.Random())
    tally = Tally({scenario.name: scenario})
    profile: dict[str, Any] = {}

    def headers(req: loadgen.Request) -> list[tuple[str, str]]:
        return [
            ("X-Key-Id", ctx.key.key_id),
            ("X-Signature", loadgen.sign(ctx.key.secret, req.method, req.path, req.body)),
        ]

    def start_profile() -> None:
        if args.profile:
            path = RESULTS_DIR / f"ingest-{ctx.stamp}-{server.name}-{scenario.name}-{args.profile}.folded"
            profile["path"] = path
            profile["code_dir"] = ctx.env.code_dir
            profile["proc"] = profiling.start_recording(server.pid, args.seconds, path, args.profile)

    busy_before = cpu.busy_share(1.0)
    if busy_before > BUSY_WARNING:
        environment.log(
            f"warning: the machine was {busy_before:.0%} busy before this scenario; other work skews the results"
        )
    environment.log(
        f"{server.name} / {scenario.name}: {args.warmup:g} s warm-up + {args.seconds:g} s, {args.concurrency} connections"
    )
    monitor = ServerMonitor(ctx.env, server.pid, start_profile)
    result = run_load(
        monitor,
        args,
        server.port,
        lambda: scenario.request(factory),
        tally.judge,
        headers,
        concurrency=args.concurrency,
    )
    applied = wait_applied(ctx.pg)
    durable = check_durable(ctx.pg, ctx.game, tally.acked)
    mirrored = check_mirrored(ctx.pg, ctx.r, ctx.board)
    mirrored["ok"] = mirrored["ok"] and applied["ok"]
    mirrored["applied"] = applied

    seconds = result.measured_seconds
    row: dict[str, Any] = {
        "server": server.name,
        "scenario": scenario.name,
        "concurrency": args.concurrency,
        "matches_per_request": scenario.matches_per_request,
        **load_figures(result, tally),
        "matches_per_s": tally.measured_matches / seconds,
        "results_per_s": tally.measured_results / seconds,
        "rejected_by_code": dict(tally.rejected),
        "machine_busy_before": round(busy_before, 3),
        "cpu_cores": monitor.cores,
        "loadgen_cpu_seconds": round(monitor.loadgen_cpu_seconds, 3),
        "postgres_connections": monitor.report(result.completed),
        "durable": durable,
        "mirrored": mirrored,
    }
    if "proc" in profile:
        row["profile"] = profiling.finish_recording(profile["proc"], profile["path"], profile["code_dir"])
    environment.log(
        f"{server.name} / {scenario.name}: {row['requests_per_s']:,.1f} req/s, {row['results_per_s']:,.0f} results/s, "
        f"p50 {row['latency_ms']['p50']} ms, errors {row['errors']}; "
        f"durable: {durable_text(durable)} / mirrored: {mirrored_text(mirrored)}"
    )
    log_errors(row, tally, server.log_tail)
    return row


# --------------------------------------------------------------------------- output


def render_tables(runs: list[dict[str, Any]]) -> str:
    main = markdown_table(
        [
            "server",
            "scenario",
            "conc",
            "req/s",
            "matches/s",
            "results/s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "errors",
            "durable / mirrored",
        ],
        [
            [
                r["server"],
                r["scenario"] if r["matches_per_request"] == 1 else f"{r['scenario']} ({r['matches_per_request']})",
                r["concurrency"],
                r["requests_per_s"],
                r["matches_per_s"],
                r["results_per_s"],
                r["latency_ms"]["p50"],
                r["latency_ms"]["p95"],
                r["latency_ms"]["p99"],
                r["errors"],
                f"durable: {durable_text(r['durable'])} / mirrored: {mirrored_text(r['mirrored'])}",
            ]
            for r in runs
        ],
    )
    resources = markdown_table(
        ["server", "scenario", "server", "postgres", "redis", "loadgen", "other", "busy", "busy before",
         "pg conns peak", "pg sessions/req"],
        [
            [r["server"], r["scenario"], r["cpu_cores"].get("server"), r["cpu_cores"].get("postgres"),
             r["cpu_cores"].get("redis"), r["cpu_cores"].get("loadgen"), r["cpu_cores"].get("other"),
             f"{r['cpu_cores'].get('machine_busy', 0):.0%}", f"{r['machine_busy_before']:.0%}",
             r["postgres_connections"]["peak_bench_connections"], r["postgres_connections"]["sessions_per_request"]]
            for r in runs
        ],
    )  # fmt: skip
    return (
        f"{main}\n\nDuring the measured window: CPU cores in use by group, machine busy share (and before the "
        f"scenario), peak Postgres connections of the bench database, Postgres sessions opened per request:"
        f"\n\n{resources}"
    )


# --------------------------------------------------------------------------- command line


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser("python -m bench.ingest", __doc__)
    add_run_args(
        parser, "players", "seconds", "warmup", "concurrency", "batch-size", "workers", "board", "timeout", "code",
        "profile", seconds=20.0, timeout=120.0,
    )  # fmt: skip
    parser.add_argument(
        "--servers", type=csv_choices(tuple(SERVERS)), default=["uvicorn", "gunicorn"], help="default uvicorn,gunicorn"
    )
    parser.add_argument(
        "--scenarios", type=csv_choices(SCENARIOS), default=list(SCENARIOS), help="default single,batch"
    )
    args = parser.parse_args(argv)
    check_run_args(parser, args)
    return args


def run(args: argparse.Namespace, env: environment.BenchEnv, code: CodeTree) -> int:
    if args.profile:
        profiling.py_spy_binary()  # fail before any work if it is missing
    started = datetime.now(UTC)
    stamp = utc_stamp(started)
    environment.log("preparing the bench database (migrate, apply bench/game.toml, create a server key)")
    environment.prepare_database(env)
    key = environment.create_server_key(env)
    with environment.connect(env) as pg, environment.redis_client(env) as r:
        machine = machine_info(pg, r)
        environment.log(machine_line(machine))
        ctx = Context(
            args,
            env,
            key,
            pg,
            r,
            environment.board_info(pg, args.board),
            environment.game_id(pg),
            stamp,
            secrets.token_hex(4),
        )
        scenarios = {
            "single": Scenario("single", f"/api/v1/games/{environment.GAME_SLUG}/matches", 1, batch=False),
            "batch": Scenario(
                "batch", f"/api/v1/games/{environment.GAME_SLUG}/matches/batch", args.batch_size, batch=True
            ),
        }
        runs: list[dict[str, Any]] = []
        for name in args.servers:
            environment.log(f"starting {name}")
            environment.manage(env, "migrate", "--noinput")  # the working tree may have gained a migration meanwhile
            # the projector applies what the server stores (no Celery: nothing here needs it)
            with background(env, {}, celery=False), ServerProcess(name, env, workers=args.workers) as server:
                environment.log(f"{name} ready on port {server.port}: {' '.join(server.command)}")
                for scenario_name in args.scenarios:
                    row = run_scenario(ctx, server, scenarios[scenario_name])
                    row["server_command"] = server.command
                    runs.append(row)
    tables = render_tables(runs)
    report_results(
        "ingest",
        tables,
        RunInfo.of(started, machine, code, args),
        game_file="bench/game.toml",
        runs=runs,
    )
    ok = all(r["durable"]["ok"] and r["mirrored"]["ok"] for r in runs)
    return 0 if ok else 2


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_benchmark(args, run)


if __name__ == "__main__":
    sys.exit(main())
