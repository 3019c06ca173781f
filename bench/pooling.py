"""Connection pooling: Django's built-in pool (psycopg_pool, per process) against pgbouncer in
transaction mode, for the ingest and a Postgres read path, in one run (ratios to the built-in
pool of the same round).

    python -m bench.pooling [--seconds 8] [--rounds 2] [--concurrency 16]

It starts, under .local/pooling/, a PostgreSQL, a Redis and a pgbouncer (Debian's `pgbouncer`,
installed with apt-get as root when missing; pool_mode = transaction, default_pool_size 20) of
its own, the projector once, then for each configuration the web tier `make run` starts
(scripts/web.py, 3 workers) and two closed loops: signed single-match submissions (each a new
match of a new player) and a signed CSV export of a board window of the ~1,000 values seeded first (a read that
runs on Postgres every time). The configurations:

  builtin          DATABASE_URL straight to Postgres, the built-in pool (DB_POOL_MAX 16 per process)
  pgbouncer        through pgbouncer, no pool of our own (DB_POOL=0: a new client connection to
                   pgbouncer per request), prepared statements and server-side cursors off
                   (transaction pooling cannot keep them)
  pgbouncer+pool   through pgbouncer with the built-in pool as well (its connections are to pgbouncer)

The projector keeps a direct connection in every configuration: its LISTEN and session advisory
locks need a session (docs/operations.md, "Connection pooling").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from itertools import count
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from bench import loadgen  # noqa: E402
from bench.faults import GAME, GAME_FILE, VENV_BIN, LocalPostgres, LocalRedis, _request, _wait  # noqa: E402
from scripts import services  # noqa: E402
from scripts.services import _as_user, _free_port, _service_user  # noqa: E402

ROOT = services.LOCAL_DIR / "pooling"
CONFIGS = {
    "builtin": {},
    "pgbouncer": {"DB_POOL": "0", "DB_PREPARED_STATEMENTS": "0", "DB_SERVER_SIDE_CURSORS": "0"},
    "pgbouncer+pool": {"DB_PREPARED_STATEMENTS": "0", "DB_SERVER_SIDE_CURSORS": "0"},
}


def log(message: str) -> None:
    print(f"pooling: {message}", file=sys.stderr, flush=True)


def pgbouncer_binary() -> str:
    for path in (shutil.which("pgbouncer"), "/usr/sbin/pgbouncer"):
        if path and os.access(path, os.X_OK):
            return path
    if services._is_root() and shutil.which("apt-get"):
        log("installing pgbouncer with apt-get")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], env=env, stdout=sys.stderr, check=True)
        subprocess.run(["apt-get", "install", "-y", "pgbouncer"], env=env, stdout=sys.stderr, check=True)
        return pgbouncer_binary()
    raise SystemExit("pgbouncer is not installed: sudo apt-get install pgbouncer")


class PgBouncer:
    def __init__(self, root: Path, pg_port: int) -> None:
        self.binary = pgbouncer_binary()
        self.user = _service_user()
        self.dir = services.service_dir(root / "pgbouncer", self.user, name="pooling-pgbouncer", fresh=True)
        self.port = _free_port(pg_port + 1)
        self.pg_port = pg_port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/leaderboard"

    def start(self) -> None:
        (self.dir / "users.txt").write_text('"postgres" ""\n')
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"leaderboard = host=127.0.0.1 port={self.pg_port} dbname=leaderboard\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.dir / 'users.txt'}\n"
            "pool_mode = transaction\ndefault_pool_size = 20\nmax_client_conn = 2000\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {self.dir / 'pgbouncer.log'}\n"
        )
        for path in self.dir.iterdir():
            if self.user:
                services._chown(path, self.user)
        self.proc = subprocess.Popen(
            _as_user([self.binary, str(self.dir / "pgbouncer.ini")], self.user),
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd="/",
        )  # fmt: skip
        _wait("pgbouncer", lambda: services.probe_postgres("127.0.0.1", self.port, database="leaderboard") == "ok")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) >= 2 else (values[0] if values else 0.0)


def _loop(port: int, key: dict[str, str], make: object, *, warmup: float, seconds: float, concurrency: int) -> dict:
    def headers(req: loadgen.Request) -> list[tuple[str, str]]:
        sig = loadgen.sign(key["secret"], req.method, req.path, req.body)
        return [("X-Key-Id", key["key_id"]), ("X-Signature", sig)]

    load = loadgen.Load(
        host="127.0.0.1", port=port, warmup=warmup, seconds=seconds, make_request=make,  # type: ignore[arg-type]
        on_response=lambda req, resp, measured: None, headers=headers, timeout=30.0,
    )  # fmt: skip
    result = asyncio.run(loadgen.closed_loop(load, concurrency=concurrency, stagger=0.01))
    ok = sum(n for s, n in result.statuses.items() if s.startswith("2"))
    errors = {s: n for s, n in result.statuses.items() if not s.startswith("2")}
    return {
        "rps": result.completed / seconds,
        "p50_ms": _percentile(result.latencies, 50) * 1000,
        "p99_ms": _percentile(result.latencies, 99) * 1000,
        "ok": ok,
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per loop (default 8)")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2, help="every configuration this many times, in turn")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--only", help="comma-separated configurations: " + ", ".join(CONFIGS))
    args = parser.parse_args(argv)
    chosen = [c for c in CONFIGS if not args.only or c in args.only.split(",")]

    shutil.rmtree(ROOT, ignore_errors=True)
    ROOT.mkdir(parents=True)
    pg, redis = LocalPostgres(ROOT), LocalRedis(ROOT)
    pg.create()
    redis.start()
    bouncer = PgBouncer(ROOT, pg.port)
    bouncer.start()
    base_env = {
        **os.environ, **services.ensure_secrets(),
        "DATABASE_URL": pg.url, "REDIS_URL": redis.url, "CELERY_BROKER_URL": redis.url,
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings", "DEBUG": "0",
        "ANTICHEAT_ASYNC_CHECKS": "0", "PYTHONUNBUFFERED": "1",
        # the load comes from one address: the per-address read limit would answer 429s
        "THROTTLE_ADDRESS_READS": "100000000/min", "THROTTLE_PLAYER_READS": "100000000/min",
    }  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []

    def manage(*a: str) -> str:
        cmd = [str(VENV_BIN / "python"), "manage.py", *a]
        return subprocess.run(cmd, cwd=REPO_ROOT, env=base_env, check=True, capture_output=True, text=True).stdout

    rows: list[tuple[int, str, str, dict]] = []
    try:
        manage("migrate", "--noinput")
        manage("apply_game_config", str(GAME_FILE))
        key = json.loads(manage("create_server_key", GAME, "pooling"))
        projector_log = open(ROOT / "projector.log", "ab")  # noqa: SIM115 - the child keeps it
        procs.append(subprocess.Popen([str(VENV_BIN / "python"), "manage.py", "projector"], cwd=REPO_ROOT,
                                      env=base_env, stdout=projector_log, stderr=subprocess.STDOUT))  # fmt: skip
        serial = count()
        now = lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # noqa: E731

        def submission() -> loadgen.Request:
            n = next(serial)
            body = {"match_id": f"pool-{n}", "ended_at": now(),
                    "results": [{"player": f"pp{n}", "board": "rating", "score": 1000 + n % 5000}]}  # fmt: skip
            return loadgen.Request("POST", f"/api/v1/games/{GAME}/matches", json.dumps(body).encode())

        def seed() -> loadgen.Request:  # the read's board: written before, never during, the measurements
            n = next(serial)
            body = {"match_id": f"seed-{n}", "ended_at": now(),
                    "results": [{"player": f"sp{n}", "board": "kills", "score": n % 1000}]}  # fmt: skip
            return loadgen.Request("POST", f"/api/v1/games/{GAME}/matches", json.dumps(body).encode())

        def export() -> loadgen.Request:
            return loadgen.Request("GET", f"/api/v1/games/{GAME}/boards/kills/export?window=all", b"")

        for round_no in range(1, args.rounds + 1):
            for name in chosen if round_no % 2 else list(reversed(chosen)):
                url = pg.url if name == "builtin" else bouncer.url
                env = {**base_env, "DATABASE_URL": url, **CONFIGS[name]}
                port = _free_port(58180)
                web_log = open(ROOT / f"web-{name}.log", "ab")  # noqa: SIM115
                web = subprocess.Popen(
                    [str(VENV_BIN / "python"), "scripts/web.py", "--port", str(port), "--workers", "3"],
                    cwd=REPO_ROOT, env=env, stdout=web_log, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
                try:
                    stack = type("S", (), {"port": port, "key_id": "", "secret": ""})()
                    _wait("web", lambda s=stack: _request(s, "GET", "/healthz")[0] == 200, timeout=90)  # type: ignore[arg-type]
                    if round_no == 1 and name == chosen[0]:  # the board the export reads, once
                        seeded = _loop(port, key, seed, warmup=0, seconds=4, concurrency=8)
                        log(f"seeded {seeded['ok']} kills values")
                    for path, make in (("ingest", submission), ("read", export)):
                        r = _loop(
                            port, key, make, warmup=args.warmup, seconds=args.seconds, concurrency=args.concurrency
                        )
                        rows.append((round_no, name, path, r))
                        log(
                            f"round {round_no} {name:<15} {path:<6} {r['rps']:7.1f} req/s p99 {r['p99_ms']:.1f} ms {r['errors'] or ''}"
                        )
                finally:
                    os.killpg(web.pid, 15)
                    web.wait(timeout=30)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=20)
        bouncer.stop()
        redis.destroy()
        pg.destroy()
    print_table(rows)
    return 0


def print_table(rows: list[tuple[int, str, str, dict]]) -> None:
    print(f"{'round':>5} {'config':<15} {'path':<6} {'req/s':>8} {'x builtin':>9} {'p50 ms':>7} {'p99 ms':>7}  errors")
    base = {(r, p): d["rps"] for r, c, p, d in rows if c == "builtin"}
    for round_no, name, path, d in rows:
        ratio = d["rps"] / base[(round_no, path)] if base.get((round_no, path)) else float("nan")
        print(
            f"{round_no:>5} {name:<15} {path:<6} {d['rps']:8.1f} {ratio:9.2f} {d['p50_ms']:7.1f} {d['p99_ms']:7.1f}  {d['errors'] or ''}"
        )


if __name__ == "__main__":
    sys.exit(main())
