"""Redis memory per board member, and a full board rebuild through the real code path.

    .venv/bin/python -m bench.memory [--players 1000000] [--profile cpu|wall]

1. Memory: loads one sorted set of N members into Redis db 2 with pipelined ZADDs, as the
   service stores a board window (member = str(player pk) 1..N, score = scores.encoding.encode
   of a random value and time), and reports bytes per member from INFO memory used_memory
   (before/after) and from MEMORY USAGE key SAMPLES 0; then the same with 15-character string
   members (`player-00000001`) for comparison.
2. Rebuild: COPYs N players and N scores_playervalue rows (window `all`, the same values) into
   the bench database, then times boards.services.boards_rebuild(boards=[board]) in a
   configured Django, with a breakdown by phase, and checks the rebuilt sorted set.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import redis
from psycopg import sql

from bench import cpu, environment, profiling
from bench.cli import add_run_args, bench_parser, check_run_args, run_benchmark
from bench.code import CodeTree
from bench.machine import machine_info, machine_line
from bench.report import RESULTS_DIR, Laps, RunInfo, markdown_table, report_results, utc_stamp

ZADD_CHUNK = 10_000  # members per ZADD
PIPELINE_COMMANDS = 10  # ZADDs per round trip
COPY_CHUNK = 50_000  # rows per COPY write


@dataclass(frozen=True)
class Values:
    """N (value, reached_at unix seconds, encoded) triples; index i belongs to player pk i + 1."""

    values: list[int]
    seconds: list[int]
    encoded: list[int]


@dataclass(frozen=True)
class BoardShape:
    """The encoding-relevant fields of a board (scores.encoding.BoardShape), without Django."""

    order: str
    mode: str
    min_score: int
    max_score: int
    max_total: int | None = None


def random_values(board: environment.BoardInfo, n: int, rng: random.Random) -> Values:
    from scores import encoding  # of the measured code (on sys.path by then); needs no Django

    shape = BoardShape(order="desc", mode="best", min_score=board.min_score, max_score=board.max_score)
    now = int(time.time())
    values = [rng.randint(board.min_score, board.max_score) for _ in range(n)]
    seconds = [rng.randint(encoding.EPOCH_UNIX, now) for _ in range(n)]
    encoded = [encoding.encode(shape, v, datetime.fromtimestamp(s, UTC)) for v, s in zip(values, seconds, strict=True)]
    assert max(encoded) < 2**53
    return Values(values, seconds, encoded)


# --------------------------------------------------------------------------- 1. memory


def _used_memory(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


def _measure_key(r: redis.Redis, key: str, before: int, n: int) -> dict[str, Any]:
    """MEMORY USAGE of a loaded key, used_memory growth since `before`, and what DEL frees.

    Redis may be shared (someone's `make run` or tests on other dbs), so used_memory drifts: the
    DEL delta, taken between two adjacent instants, is the least disturbed of the two."""
    after = _used_memory(r)
    usage = int(r.memory_usage(key, samples=0) or 0)
    members = int(r.zcard(key))
    if members != n:
        raise environment.BenchError(f"{key}: expected {n:,} members, found {members:,}")
    loaded = _used_memory(r)
    r.delete(key)
    freed = loaded - _used_memory(r)
    return {
        "key": key,
        "members": members,
        "used_memory_before": before,
        "used_memory_after": after,
        "used_memory_delta": after - before,
        "bytes_per_member_used_memory": (after - before) / n,
        "used_memory_freed_by_del": freed,
        "bytes_per_member_freed_by_del": freed / n,
        "memory_usage": usage,
        "bytes_per_member_memory_usage": usage / n,
    }


def measure_sorted_set(
    r: redis.Redis, key: str, member: Callable[[int], str], values: Values, label: str
) -> dict[str, Any]:
    """Load one sorted set with pipelined ZADDs into the flushed bench db and measure it."""
    environment.flush_redis(r)
    n = len(values.encoded)
    before = _used_memory(r)
    started = time.perf_counter()
    pipe = r.pipeline(transaction=False)
    for start in range(0, n, ZADD_CHUNK):
        pipe.zadd(key, {member(i + 1): values.encoded[i] for i in range(start, min(n, start + ZADD_CHUNK))})
        if len(pipe) >= PIPELINE_COMMANDS:
            pipe.execute()
    pipe.execute()
    load_seconds = time.perf_counter() - started
    return {
        "label": label,
        "member_example": member(1),
        **_measure_key(r, key, before, n),
        "load_seconds": round(load_seconds, 3),
    }


# --------------------------------------------------------------------------- 2. rebuild


Column = Callable[[int], str]  # row index -> the field in COPY text format


def _copy(cur: psycopg.Cursor, table: str, columns: dict[str, Column], rows: int) -> None:
    """COPY `rows` rows into `table`, filling the columns it has among `columns`.

    The schema moves with the code measured (bench/code.py): a column we do not know is left
    to its default, unless it is NOT NULL without one, which is refused by name."""
    cur.execute(
        "SELECT column_name, is_nullable = 'YES' OR column_default IS NOT NULL OR is_identity = 'YES' "
        "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s",
        (table,),
    )
    present = dict(cur.fetchall())
    unknown = sorted(name for name, optional in present.items() if not optional and name not in columns)
    if unknown:
        raise environment.BenchError(
            f"{table} has required columns the bench does not fill: {', '.join(unknown)} (bench/memory.py)"
        )
    names = [name for name in columns if name in present]
    fields = [columns[name] for name in names]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(n) for n in names)
    )
    with cur.copy(statement) as copy:
        for start in range(0, rows, COPY_CHUNK):
            copy.write(
                "".join("\t".join(f(i) for f in fields) + "\n" for i in range(start, min(rows, start + COPY_CHUNK)))
            )


def load_board(pg: psycopg.Connection, game: int, board: environment.BoardInfo, values: Values) -> dict[str, float]:
    """Empty the score tables, COPY players 1..N and their `all` values; return seconds per step."""
    n = len(values.encoded)
    laps = Laps(3)
    steps, step = laps.seconds, laps.mark

    environment.reset_scores(pg)
    step("truncate")
    # Updated a day ago: rows written long before the rebuild, so its catch-up pass replays none.
    updated = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    reached = [datetime.fromtimestamp(s, UTC).isoformat() for s in values.seconds]
    with pg.cursor() as cur:
        player_columns: dict[str, Column] = {
            "id": lambda i: str(i + 1),
            "game_id": lambda i: str(game),
            "external_id": lambda i: f"p{i + 1}",
            "display_name": lambda i: "",
            "created_at": lambda i: updated,
        }
        _copy(cur, "scores_player", player_columns, n)
        cur.execute("SELECT setval(pg_get_serial_sequence('scores_player', 'id'), %s)", (n,))
        step("copy_players")
        value_columns: dict[str, Column] = {
            "board_id": lambda i: str(board.id),
            "window": lambda i: "all",
            "player_id": lambda i: str(i + 1),
            "value": lambda i: str(values.values[i]),
            "reached_at": lambda i: reached[i],
            "encoded": lambda i: str(values.encoded[i]),
            "metadata": lambda i: "\\N",
            "latest_at": lambda i: reached[i],  # a best board's latest counted result is its best
            "updated_at": lambda i: updated,
        }
        _copy(cur, "scores_playervalue", value_columns, n)
        step("copy_values")
        cur.execute("ANALYZE scores_player")
        cur.execute("ANALYZE scores_playervalue")
        step("analyze")
    steps["total"] = round(sum(steps.values()), 3)
    return steps


@contextlib.contextmanager
def timed_phases(module: ModuleType, names: tuple[str, ...]) -> Iterator[dict[str, float]]:
    """Time calls to module-level functions (by wrapping them) while the block runs.

    boards_rebuild calls its phases by their global names, so wrapping the module attributes
    times them without touching the service code. Missing names (renamed since) are skipped."""
    times: dict[str, float] = {}
    originals = {name: getattr(module, name) for name in names if callable(getattr(module, name, None))}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[name] = times.get(name, 0.0) + time.perf_counter() - started

        return timed

    for name, fn in originals.items():
        setattr(module, name, wrap(name, fn))
    try:
        yield times
    finally:
        for name, fn in originals.items():
            setattr(module, name, fn)


def rebuild(
    env: environment.BenchEnv, r: redis.Redis, board: environment.BoardInfo, values: Values, profile: str | None
) -> dict[str, Any]:
    """boards_rebuild(boards=[board]) in this process, with Django configured for the bench."""
    env.setup_django()
    from boards import services as board_services
    from rediskit.client import get_redis
    from scores.models import Board

    service_db = int(get_redis().connection_pool.connection_kwargs.get("db", 0))
    if service_db != environment.BENCH_REDIS_DB:
        raise environment.BenchError(f"Django's Redis is db {service_db}, expected {environment.BENCH_REDIS_DB}")
    board_obj = Board.objects.get(id=board.id)
    environment.flush_redis(r)
    before_memory = _used_memory(r)

    spy: subprocess.Popen[bytes] | None = None
    profile_path = RESULTS_DIR / f"memory-{utc_stamp()}-rebuild-{profile}.folded"
    if profile:
        spy = profiling.start_recording(os.getpid(), 3600, profile_path, profile)
        time.sleep(1.0)  # let py-spy attach
    phases_wanted = ("_board_stream", "_board_swap", "_catch_up")
    meter = cpu.CpuMeter(database=environment.BENCH_DB_NAME)
    with cpu.metered(meter) as cpu_split, timed_phases(board_services, phases_wanted) as phases:
        started = time.perf_counter()
        report = board_services.boards_rebuild(boards=[board_obj])
        seconds = time.perf_counter() - started
    profile_summary = _stop_profile(spy, profile_path, env.code_dir) if spy is not None else None

    key = f"lb:{{{board.id}}}:all"
    n = len(values.encoded)
    sample = random.Random(7).sample(range(n), min(1000, n))
    scores = r.zmscore(key, [str(i + 1) for i in sample])
    wrong = sum(1 for i, s in zip(sample, scores, strict=True) if s is None or int(s) != values.encoded[i])
    if wrong:
        raise environment.BenchError(f"rebuilt {key}: {wrong} of {len(sample)} sampled scores differ from Postgres")
    measured = _measure_key(r, key, before_memory, n)  # deletes the key
    return {
        "entries": report.entries,
        "seconds": round(seconds, 3),
        "entries_per_s": report.entries / seconds,
        "report": {k: getattr(report, k) for k in ("boards", "windows", "entries", "caught_up", "seconds")},
        "phases_seconds": {name.lstrip("_"): round(t, 3) for name, t in phases.items()},
        "cpu_cores": cpu_split,
        "rebuilt_key": {**measured, "sampled_scores_checked": len(sample)},
        "profile": profile_summary,
    }


def _stop_profile(spy: subprocess.Popen[bytes], path: Path, code_dir: Path) -> dict[str, Any] | None:
    spy.send_signal(signal.SIGINT)  # py-spy writes what it has on Ctrl-C
    try:
        spy.wait(timeout=60)
    except Exception:
        spy.kill()
        raise
    if not path.exists():
        environment.log(f"py-spy wrote nothing ({spy.returncode})")
        return None
    summary = profiling.summarise(path, code_dir)
    print(f"\nprofile {path.name}\n{summary.render()}\n", flush=True)
    return {"path": str(path), "samples": summary.samples, "inclusive": summary.inclusive, "self": summary.self_time}


# --------------------------------------------------------------------------- command line


def render_tables(memory: list[dict[str, Any]], rebuilt: dict[str, Any]) -> str:
    key = rebuilt["rebuilt_key"]
    rows = [
        [m["label"], m["member_example"], m["members"], m["used_memory_delta"], m["bytes_per_member_used_memory"],
         m["bytes_per_member_freed_by_del"], m["memory_usage"], m["bytes_per_member_memory_usage"]]
        for m in [*memory, {"label": "rebuilt by boards_rebuild", "member_example": "1", **key}]
    ]  # fmt: skip
    memory_table = markdown_table(
        ["sorted set", "member", "members", "used_memory Δ B", "B/member (used_memory Δ)", "B/member (freed by DEL)",
         "MEMORY USAGE B", "B/member (MEMORY USAGE)"],
        rows,
    )  # fmt: skip
    phases = rebuilt["phases_seconds"]
    cores = rebuilt["cpu_cores"]
    rebuild_table = markdown_table(
        ["entries", "COPY load s", "rebuild s", "entries/s", "stream s", "swap s", "catch-up s", "caught up",
         "cores: bench/pg/redis"],
        [[rebuilt["entries"], rebuilt["load_seconds"], rebuilt["seconds"], rebuilt["entries_per_s"],
          phases.get("board_stream"), phases.get("board_swap"), phases.get("catch_up"), rebuilt["report"]["caught_up"],
          f"{cores.get('self', 0):.2f} / {cores.get('postgres', 0):.2f} / {cores.get('redis', 0):.2f}"]],
    )  # fmt: skip
    return f"{memory_table}\n\nRebuild of one board window through boards.services.boards_rebuild:\n\n{rebuild_table}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = bench_parser("python -m bench.memory", __doc__)
    add_run_args(parser, "players", "board", "seed", "code", "profile")
    args = parser.parse_args(argv)
    check_run_args(parser, args)
    return args


def run(args: argparse.Namespace, env: environment.BenchEnv, code: CodeTree) -> int:
    if args.profile:
        profiling.py_spy_binary()
    started = datetime.now(UTC)
    environment.log("preparing the bench database (migrate, apply bench/game.toml)")
    environment.prepare_database(env)
    sys.path.insert(0, str(env.code_dir))  # the measured code's scores/ and boards/, imported below
    with environment.connect(env) as pg, environment.redis_client(env) as r:
        machine = machine_info(pg, r)
        environment.log(machine_line(machine))
        board = environment.board_info(pg, args.board)
        environment.log(f"generating {args.players:,} encoded scores")
        values = random_values(board, args.players, random.Random(args.seed))
        key = f"lb:{{{board.id}}}:all"  # rediskit/keys.py board_key()
        environment.log("loading the sorted set with integer members")
        memory = [measure_sorted_set(r, key, str, values, "player pk (as stored)")]
        environment.log("loading the sorted set with 15-character members")
        memory.append(measure_sorted_set(r, key, lambda i: f"player-{i:08d}", values, "15-char string"))
        environment.flush_redis(r)
        environment.log(f"COPYing {args.players:,} players and values into {environment.BENCH_DB_NAME}")
        load_steps = load_board(pg, environment.game_id(pg), board, values)
        environment.log(f"rebuilding board {board.slug} (id {board.id}) through boards_rebuild")
        rebuilt = rebuild(env, r, board, values, args.profile)
        rebuilt["load_seconds"] = load_steps["total"]
        rebuilt["load_steps_seconds"] = load_steps
        redis_memory = r.info("memory")
        redis_config = r.config_get("zset-max-*")
    tables = render_tables(memory, rebuilt)
    report_results(
        "memory",
        tables,
        RunInfo.of(started, machine, code, args),
        redis={"mem_allocator": redis_memory.get("mem_allocator"), **redis_config},
        memory=memory,
        rebuild=rebuilt,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_benchmark(args, run)


if __name__ == "__main__":
    sys.exit(main())
