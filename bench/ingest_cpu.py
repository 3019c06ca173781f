"""CPU cost of ingest per request, in process: the Python process plus its Postgres backend.

    .venv/bin/python -m bench.ingest_cpu [--mode batch|single] [--requests N] [--batch-size 1000]
                                         [--players 1000000] [--code REV|DIR]
                                         [--profile request|projector] [--projector-batch N]

No HTTP server and no concurrency: signed requests go one at a time through Django's test
client to the real view (validation, rules, the transaction), then what the projector spends applying them,
so the figure is the work per request, steadier on a busy machine than throughput. Two
revisions compare back to back with `--code REV` (bench/code.py). It runs where the suite runs
(bench/environment.py: the bench database, created and migrated afresh, and Redis db 2, under
the benchmarks' lock). Prints CPU milliseconds per request: Python, the Postgres backend
(`/proc/<pid>/stat`), total.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import time
from collections.abc import Callable

from bench import cpu, environment, ingest, loadgen
from bench.cli import add_run_args, bench_parser, run_benchmark
from bench.code import CodeTree


def run(args: argparse.Namespace, env: environment.BenchEnv, code: CodeTree) -> int:
    environment.prepare_database(env)
    key = environment.create_server_key(env)
    with environment.connect(env) as pg, environment.redis_client(env) as r:
        board = environment.board_info(pg, "rating")
        environment.flush_redis(r)
    # the projector runs after the requests, not beside them: admission control would refuse
    # them as the backlog ages, and this measures the work of a request, not the refusal
    os.environ["ADMISSION_MAX_LAG_MS"] = "0"
    env.setup_django()
    from django.db import connection
    from django.test import Client

    from scores.projection import batch_apply, pending_apply

    client = Client()
    per_request = args.batch_size if args.mode == "batch" else 1
    scenario = ingest.Scenario(args.mode, per_request, batch=args.mode == "batch")
    factory = ingest.MatchFactory(f"{time.time():.0f}", board, args.players, random.Random(1))

    def request() -> None:
        req = scenario.request(factory)
        headers = {"X-Key-Id": key.key_id, "X-Signature": loadgen.sign(key.secret, "POST", req.path, req.body)}
        response = client.generic("POST", req.path, data=req.body, content_type="application/json", headers=headers)
        if response.status_code not in (200, 201):
            raise environment.BenchError(f"{response.status_code}: {response.content[:300]!r}")

    def measured(work: Callable[[], None], profiled: bool) -> tuple[float, float, float]:
        """(Python CPU, its Postgres backend's CPU, wall) seconds of `work`."""
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            backend = cur.fetchone()[0]
        pg0, py0, wall0 = cpu.process_seconds(backend), time.process_time(), time.perf_counter()
        if profiled:
            profiler.enable()
        work()
        if profiled:
            profiler.disable()
        return time.process_time() - py0, cpu.process_seconds(backend) - pg0, time.perf_counter() - wall0

    def project() -> None:
        if args.projector_batch:
            while batch_apply(max_matches=args.projector_batch).rows:
                pass
        else:
            pending_apply()

    for _ in range(3):
        request()
    pending_apply()
    profiler = cProfile.Profile()
    n = args.requests

    def requests() -> None:
        for _ in range(n):
            request()

    py, pg, wall = measured(requests, args.profile == "request")
    print(
        f"{args.mode} ({per_request} result(s) per request), {n} requests: CPU ms per request: "
        f"python {1000 * py / n:.2f}, postgres {1000 * pg / n:.2f}, total {1000 * (py + pg) / n:.2f} "
        f"({n * per_request / (py + pg):,.0f} results per CPU-second); wall {1000 * wall / n:.1f} ms per request"
    )
    # what the projector then spends applying them (in batches of what is pending, as when it
    # has fallen behind: the cost per result under load), its Redis mirror included
    py, pg, wall = measured(project, args.profile == "projector")
    results = n * per_request
    print(
        f"projector, {results} results: CPU ms per 1000 results: python {1e6 * py / results:.1f}, "
        f"postgres {1e6 * pg / results:.1f}, total {1e6 * (py + pg) / results:.1f} "
        f"({results / (py + pg):,.0f} results per CPU-second); wall {wall:.2f} s"
    )
    if args.profile:
        pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "cumulative")).print_stats(35)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("python -m bench.ingest_cpu", __doc__)
    parser.add_argument("--mode", choices=["batch", "single"], default="batch")
    parser.add_argument("--requests", type=int, default=10, help="measured requests (default 10)")
    add_run_args(parser, "batch-size", "players", "code")
    parser.add_argument("--profile", choices=["request", "projector"], help="print a cProfile of one side")
    parser.add_argument(
        "--projector-batch", type=int, default=None, help="matches per projector batch (default: all pending at once)"
    )
    return run_benchmark(parser.parse_args(argv), run, wait=True)


if __name__ == "__main__":
    sys.exit(main())
