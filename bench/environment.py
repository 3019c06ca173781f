"""Where the benchmarks run, and which code they measure.

Where: a database and a Redis db of their own, never the developer's. The servers are the ones
`make run` uses (scripts/services.py finds or starts them); the benchmarks only swap the
database name for ``leaderboard_bench`` and the Redis db for 2. Every benchmark takes a lock, so
two of them never reset each other's data mid-run.

Which code (`--code`): by default the working tree the bench lives in, as it is on disk (others
may be editing it: the results then record which files differ from the commit). With ``--code
REV`` a clean export of that git revision (``git archive``, the repository is only read) into a
temporary directory, removed afterwards; with ``--code DIR`` another checkout. The benchmark
code itself (bench/) always comes from this checkout, so one bench can measure several
revisions.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
import redis
from psycopg import sql

from scripts import services

REPO_ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
# Not resolved: a venv's python is a symlink to the base interpreter, whose bin/ lacks uvicorn.
VENV_BIN = Path(sys.executable).parent
GAME_FILE = BENCH_DIR / "game.toml"
GAME_SLUG = "bench"

# Overridable so that a second bench (the smoke test inside a test suite, a helper's run next
# to someone else's) never resets another's data: each name gets its own lock too.
BENCH_DB_NAME = os.environ.get("BENCH_DB_NAME", "leaderboard_bench")
BENCH_REDIS_DB = int(os.environ.get("BENCH_REDIS_DB", "2"))
# Everything the ingest path writes; games, boards, seasons and keys stay.
SCORE_TABLES = ("scores_boardoutbox", "scores_playervalue", "scores_result", "scores_match", "scores_player")


class BenchError(Exception):
    """The benchmark cannot run; the message says why."""


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@dataclass(frozen=True)
class BenchEnv:
    database_url: str
    redis_url: str
    code_dir: Path = REPO_ROOT  # the checkout whose manage.py and servers run (--code)

    def process_env(self, **extra: str) -> dict[str, str]:
        """The environment of a server or manage.py subprocess: bench database, bench Redis, DEBUG off
        (with this install's secrets, as `make run` has them)."""
        return {
            **os.environ,
            **services.ensure_secrets(),
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            # settings name a unix socket the way kombu spells it
            **({} if self.redis_url.startswith("unix:") else {"CELERY_BROKER_URL": self.redis_url}),
            "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings",
            "DEBUG": "0",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }

    def setup_django(self) -> None:
        """Configure Django in this process: the measured code (`code_dir`), the bench database and Redis.

        The measured code goes first on sys.path, and django.setup() runs from its directory:
        Celery's Django fixup (leaderboard_project/celery.py) puts the current directory first on
        sys.path, which would otherwise import this checkout's apps under `--code REV`."""
        code = str(self.code_dir)
        if code not in sys.path:
            sys.path.insert(0, code)
        os.environ.update(self.process_env())
        previous = os.getcwd()
        os.chdir(code)
        try:
            import django

            django.setup()
            import scores
        finally:
            os.chdir(previous)
        if not Path(scores.__file__ or "").resolve().is_relative_to(self.code_dir.resolve()):
            raise BenchError(f"Django loaded {scores.__file__}, not the measured code in {code}")


@contextlib.contextmanager
def bench_environment(code_dir: Path = REPO_ROOT) -> Iterator[BenchEnv]:
    """The bench URLs, under the bench lock (queued behind another benchmark holding it), on the
    Postgres and Redis `make run` would use; stops any server scripts/services.py started for us."""
    lock_path = Path(tempfile.gettempdir()) / f"{BENCH_DB_NAME}.lock"
    with open(lock_path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another benchmark is running (lock {lock_path}); waiting for it to finish")
            started = time.monotonic()
            fcntl.flock(lock, fcntl.LOCK_EX)
            log(f"lock acquired after {time.monotonic() - started:.0f} s")
        try:
            found = services.ensure_services()
            env = BenchEnv(
                with_database(found["DATABASE_URL"], BENCH_DB_NAME),
                services.with_redis_db(found["REDIS_URL"], BENCH_REDIS_DB),
                code_dir,
            )
            log(f"database {services.redact(env.database_url)}, redis {services.redact(env.redis_url)}")
            yield env
        except services.ServiceError as exc:
            raise BenchError(str(exc)) from None
        finally:
            services.stop_started()


# --------------------------------------------------------------------------- the code measured


@dataclass(frozen=True)
class CodeTree:
    path: Path
    info: dict[str, Any]  # source, commit, and for a working tree what differs from it


def _git(cwd: Path, *args: str) -> str | None:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _working_tree(path: Path) -> CodeTree:
    commit = _git(path, "rev-parse", "HEAD")
    status = _git(path, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)bench") or ""
    modified = [line[3:] for line in status.splitlines() if line.strip()]
    info = {"source": "working tree", "path": str(path), "commit": commit, "dirty": bool(modified)}
    if modified:
        info["modified"] = modified
    return CodeTree(path, info)


@contextlib.contextmanager
def code_tree(spec: str | None) -> Iterator[CodeTree]:
    """`None`: this working tree; a directory: that checkout; else a git revision of this repository."""
    if spec is None:
        yield _working_tree(REPO_ROOT)
        return
    if Path(spec).is_dir():
        yield _working_tree(Path(spec).resolve())
        return
    commit = _git(REPO_ROOT, "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}")
    if commit is None:
        raise BenchError(f"--code {spec!r} is neither a directory nor a git revision of {REPO_ROOT}")
    target = Path(tempfile.mkdtemp(prefix=f"leaderboard-bench-{commit[:12]}-"))
    try:
        archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=REPO_ROOT, stdout=subprocess.PIPE)
        extract = subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout, capture_output=True)
        if archive.wait() != 0 or extract.returncode != 0:
            raise BenchError(f"cannot export {spec} ({commit[:12]}): {extract.stderr.decode(errors='replace')}")
        subject = _git(REPO_ROOT, "log", "-1", "--format=%s", commit)
        log(f"measuring {spec} = {commit[:12]} ({subject}), exported to {target}")
        yield CodeTree(target, {"source": f"git archive {spec}", "commit": commit, "subject": subject, "dirty": False})
    finally:
        shutil.rmtree(target, ignore_errors=True)


def add_code_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--code",
        metavar="REV|DIR",
        help="measure this git revision (exported with git archive) or checkout instead of the working tree",
    )


def run_benchmark(args: argparse.Namespace, run: Callable[[argparse.Namespace, Any, CodeTree], int]) -> int:
    """`run(args, env, code)` on the code `--code` names, in the bench environment (behind any
    benchmark holding its lock); the exit status every benchmark shares (1: a bench error, 130:
    interrupted)."""
    try:
        with code_tree(args.code) as code, bench_environment(code.path) as env:
            return run(args, env, code)
    except BenchError as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130


# --------------------------------------------------------------------------- Postgres


def connect(env: BenchEnv) -> psycopg.Connection:
    return psycopg.connect(env.database_url, autocommit=True, connect_timeout=10)


def reset_scores(conn: psycopg.Connection) -> None:
    """Empty every table ingest writes (the game, boards and keys stay)."""
    tables = sql.SQL(", ").join(sql.Identifier(t) for t in SCORE_TABLES)
    conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(tables))


@dataclass(frozen=True)
class BoardInfo:
    """A board of the bench game; its shape is what scores.encoding needs (no Django)."""

    id: int
    slug: str
    order: str
    mode: str
    min_score: int
    max_score: int
    max_total: int | None


def board_info(conn: psycopg.Connection, board_slug: str) -> BoardInfo:
    row = conn.execute(
        'SELECT b.id, b."order", b.mode, b.min_score, b.max_score, b.max_total'
        " FROM scores_board b JOIN scores_game g ON g.id = b.game_id WHERE g.slug = %s AND b.slug = %s",
        (GAME_SLUG, board_slug),
    ).fetchone()
    if row is None:
        raise BenchError(f"board {GAME_SLUG}/{board_slug} not found; is it in {GAME_FILE.name}?")
    board_id, order, mode, min_score, max_score, max_total = row
    return BoardInfo(int(board_id), board_slug, order, mode, int(min_score), int(max_score), max_total)


def board_set_key(board_id: int) -> str:
    """The sorted set of a board's `all` window (rediskit/keys.py board_key(), unsharded)."""
    return f"lb:{{{board_id}}}:all"


def board_players(conn: psycopg.Connection, board_id: int) -> int:
    """Players with a value in the board's `all` window, as Postgres has them."""
    row = conn.execute(
        "SELECT count(*) FROM scores_playervalue WHERE board_id = %s AND \"window\" = 'all'", (board_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def game_id(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT id FROM scores_game WHERE slug = %s", (GAME_SLUG,)).fetchone()
    if row is None:
        raise BenchError(f"game {GAME_SLUG!r} not found")
    return int(row[0])


# --------------------------------------------------------------------------- manage.py


def manage(env: BenchEnv, *args: str) -> str:
    """Run a manage.py command of the measured code against the bench database; return its stdout."""
    cmd = [sys.executable, "manage.py", *args]
    proc = subprocess.run(cmd, cwd=env.code_dir, env=env.process_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BenchError(f"manage.py {' '.join(args)} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def prepare_database(env: BenchEnv) -> None:
    """A new bench database (dropped and created, so its schema is exactly what the measured code
    migrates to), migrated, loaded with bench/game.toml; and the bench Redis db emptied."""
    name = unquote(urlsplit(env.database_url).path.lstrip("/"))
    if name != BENCH_DB_NAME:  # never drop anything else
        raise BenchError(f"refusing to recreate database {name!r}: only {BENCH_DB_NAME!r} belongs to the benchmarks")
    with psycopg.connect(with_database(env.database_url, "postgres"), autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    manage(env, "migrate", "--noinput")
    manage(env, "apply_game_config", str(GAME_FILE))
    with redis_client(env) as r:
        flush_redis(r)


@dataclass(frozen=True)
class ServerKey:
    key_id: str
    secret: str


def create_server_key(env: BenchEnv) -> ServerKey:
    # events: the `events` scenario reads the feed with it (docs/api.md §13.1); code measured
    # from before the feed knows no such scope
    try:
        out = manage(env, "create_server_key", GAME_SLUG, "bench", "--scopes", "submit,events")
    except BenchError:
        out = manage(env, "create_server_key", GAME_SLUG, "bench", "--scopes", "submit")
    data = json.loads(out.strip().splitlines()[-1])
    return ServerKey(key_id=data["key_id"], secret=data["secret"])


# --------------------------------------------------------------------------- Redis


def bench_db_only(client: redis.Redis, action: str) -> None:
    """Refuse to `action` (flush, clear) any Redis db but the bench's: never a developer's db 0."""
    db = int(client.connection_pool.connection_kwargs.get("db", 0))
    if db != BENCH_REDIS_DB:
        raise BenchError(f"refusing to {action} Redis db {db}: only db {BENCH_REDIS_DB} belongs to the benchmarks")


def redis_client(env: BenchEnv) -> redis.Redis:
    client = redis.Redis.from_url(env.redis_url)
    bench_db_only(client, "use")
    return client


def flush_redis(client: redis.Redis, wait_freed: bool = True) -> None:
    """Empty the bench Redis db. ASYNC: a 1M-member board takes longer to free than the client's
    socket timeout on a busy machine; Redis frees it in a background thread. With `wait_freed`,
    returns once that is done (polled, with a deadline), so used_memory readings that follow
    (the suite's bytes per member) do not count what is still being freed."""
    bench_db_only(client, "flush")
    client.flushdb(asynchronous=True)
    deadline = time.monotonic() + 120
    while wait_freed and int(client.info("memory").get("lazyfree_pending_objects", 0)) and time.monotonic() < deadline:
        time.sleep(0.05)
