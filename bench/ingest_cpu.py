"""CPU cost of ingest per request, in process: the Python process plus its Postgres backend.

    .venv/bin/python -m bench.ingest_cpu [--mode batch|single] [--requests N] [--batch-size 1000]
                                         [--players 1000000] [--database NAME]
                                         [--profile request|projector]

No HTTP server and no concurrency: signed requests go one at a time through Django's test
client to the real view (validation, rules, the transaction), then what the projector spends applying them,
so the figure is the work per request, steadier on a busy machine than throughput. Run it from
the checkout to measure (its code and migrations); compare two revisions back to back with
`git worktree add /tmp/other <rev>`, then in /tmp/other: `<repo>/.venv/bin/python
<repo>/bench/ingest_cpu.py ...` (use another --database per schema). Waits for the benchmarks'
lock, as they flush the Redis db it writes to.

It uses its own database (default `leaderboard_ingest_cpu`, created and migrated on first use,
score tables emptied at each start; the name must contain "cpu") and Redis db 2 (the benchmarks').
Prints CPU milliseconds per request: Python, the Postgres backend (`/proc/<pid>/stat`), total.
"""

from __future__ import annotations

import argparse
import cProfile
import fcntl
import json
import os
import pstats
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

# the lock every benchmark takes (bench/environment.py): Redis db 2 is flushed by the others
LOCK = Path(tempfile.gettempdir()) / "leaderboard_bench.lock"


def main(argv: list[str] | None = None) -> int:
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # queue behind a running benchmark
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["batch", "single"], default="batch")
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--database", default="leaderboard_ingest_cpu")
    parser.add_argument("--profile", choices=["request", "projector"], help="print a cProfile of one side")
    parser.add_argument(
        "--projector-batch", type=int, default=None, help="matches per projector batch (default: all pending at once)"
    )
    args = parser.parse_args(argv)
    if "cpu" not in args.database:
        parser.error("the database is emptied: its name must contain 'cpu'")

    import psycopg

    base = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as pg:
        if not pg.execute("SELECT 1 FROM pg_database WHERE datname = %s", [args.database]).fetchone():
            pg.execute(f'CREATE DATABASE "{args.database}"')
    os.environ["DATABASE_URL"] = f"{base}/{args.database}"
    os.environ["REDIS_URL"] = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/2")
    sys.path.insert(0, os.getcwd())
    from scripts.services import ensure_secrets

    for name, value in ensure_secrets().items():
        os.environ.setdefault(name, value)
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_project.settings")
    sys.path.insert(0, os.getcwd())
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from leaderboard_client.signing import sign

    from scores import services
    from scores.models import Game

    call_command("migrate", verbosity=0)
    call_command("apply_game_config", "bench/game.toml", verbosity=0)
    game = Game.objects.get(slug="bench")
    key, secret = services.server_key_create(game=game, name="ingest-cpu")
    with connection.cursor() as cur:
        cur.execute(
            "TRUNCATE scores_match, scores_result, scores_player, scores_playervalue, scores_boardoutbox, "
            "scores_pending, anticheat_submissionrate CASCADE"
        )
    client = Client()
    rng = random.Random(1)
    tag = f"{time.time():.0f}"
    counter = iter(range(10**9))
    per_request = args.batch_size if args.mode == "batch" else 1

    def matches(n: int) -> list[dict]:
        ended = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return [
            {
                "match_id": f"{tag}-{next(counter)}",
                "ended_at": ended,
                "results": [
                    {"player": f"p{rng.randint(1, args.players)}", "board": "rating", "score": rng.randint(0, 10**7)}
                ],
            }
            for _ in range(n)
        ]

    def request() -> None:
        if args.mode == "batch":
            path, payload = "/api/v1/games/bench/matches/batch", {"matches": matches(per_request)}
        else:
            path, payload = "/api/v1/games/bench/matches", matches(1)[0]
        body = json.dumps(payload).encode()
        headers = {"X-Key-Id": key.key_id, "X-Signature": sign(secret, "POST", path, body)}
        response = client.generic("POST", path, data=body, content_type="application/json", headers=headers)
        if response.status_code not in (200, 201):
            raise SystemExit(f"{response.status_code}: {response.content[:300]!r}")

    def backend_cpu() -> float:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            pid = cur.fetchone()[0]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    from scores.projection import batch_apply, pending_apply

    for _ in range(3):
        request()
    pending_apply()
    profiler = cProfile.Profile() if args.profile else None
    pg0, py0, wall0 = backend_cpu(), time.process_time(), time.perf_counter()
    if profiler and args.profile == "request":
        profiler.enable()
    for _ in range(args.requests):
        request()
    if profiler and args.profile == "request":
        profiler.disable()
    pg, py, wall = backend_cpu() - pg0, time.process_time() - py0, time.perf_counter() - wall0
    n = args.requests
    print(
        f"{args.mode} ({per_request} result(s) per request), {n} requests: CPU ms per request: "
        f"python {1000 * py / n:.2f}, postgres {1000 * pg / n:.2f}, total {1000 * (py + pg) / n:.2f} "
        f"({n * per_request / (py + pg):,.0f} results per CPU-second); wall {1000 * wall / n:.1f} ms per request"
    )
    # what the projector then spends applying them (in batches of what is pending, as when it
    # has fallen behind: the cost per result under load), its Redis mirror included
    pg0, py0, wall0 = backend_cpu(), time.process_time(), time.perf_counter()
    if profiler and args.profile == "projector":
        profiler.enable()
    if args.projector_batch:
        while batch_apply(max_matches=args.projector_batch).rows:
            pass
    else:
        pending_apply()
    if profiler and args.profile == "projector":
        profiler.disable()
    pg, py, wall = backend_cpu() - pg0, time.process_time() - py0, time.perf_counter() - wall0
    results = n * per_request
    print(
        f"projector, {results} results: CPU ms per 1000 results: python {1e6 * py / results:.1f}, "
        f"postgres {1e6 * pg / results:.1f}, total {1e6 * (py + pg) / results:.1f} "
        f"({results / (py + pg):,.0f} results per CPU-second); wall {wall:.2f} s"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "cumulative")).print_stats(35)
    return 0


if __name__ == "__main__":
    sys.exit(main())
