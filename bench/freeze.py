"""How long closing a window takes: freezing a 1M-player window's standings from Postgres.

Loads N players and their values into one closed daily window of the bench board (COPY, as
bench.memory does), then times seasons.services.window_freeze, the very function the close
job calls: one INSERT ... SELECT numbering the window in the contract's order.

    .venv/bin/python -m bench.freeze [--players 1000000] [--code REV]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import UTC, datetime

from bench.cli import run_benchmark
from bench.code import CodeTree
from bench.environment import (
    BenchEnv,
    BenchError,
    board_info,
    connect,
    game_id,
    log,
    prepare_database,
    redis_client,
)
from bench.machine import command_line, machine_info, machine_line
from bench.memory import load_board, random_values
from bench.report import RESULTS_DIR, utc_stamp, write_json

WINDOW = "daily:2026-01-01"  # long closed, whatever today is


def run(args: argparse.Namespace, env: BenchEnv, code: CodeTree) -> int:
    started = datetime.now(UTC)
    log("preparing the bench database (migrate, apply bench/game.toml)")
    prepare_database(env)
    sys.path.insert(0, str(env.code_dir))
    with connect(env) as pg, redis_client(env) as r:
        machine = machine_info(pg, r)
        log(machine_line(machine))
        board = board_info(pg, args.board)
        values = random_values(board, args.players, random.Random(args.seed))
        log(f"COPYing {args.players:,} players and values into window {WINDOW}")
        load_board(pg, game_id(pg), board, values)
        with pg.cursor() as cur:
            cur.execute(
                'UPDATE scores_playervalue SET "window" = %s WHERE board_id = %s AND "window" = %s',
                (WINDOW, board.id, "all"),
            )
            cur.execute("ANALYZE scores_playervalue")
        pg.commit()
    env.setup_django()
    from scores.selectors import cached_board
    from seasons.models import Standing
    from seasons.services import window_freeze

    cfg = cached_board("bench", args.board)
    log(f"freezing {WINDOW} of board {args.board} ({args.players:,} players)")
    t0 = time.perf_counter()
    freeze = window_freeze(board=cfg, window=WINDOW, reason="bench")
    seconds = time.perf_counter() - t0
    if freeze is None or freeze.entries != args.players:
        raise BenchError(f"froze {freeze and freeze.entries} entries, expected {args.players}")
    first = Standing.objects.filter(freeze=freeze).order_by("position").values_list("encoded", flat=True)[:2]
    if list(first) != sorted(values.encoded, reverse=True)[:2]:
        raise BenchError("the frozen order does not start with the best encoded scores")
    rate = args.players / seconds
    table = (
        "| players | freeze s | players/s |\n|--------:|---------:|----------:|\n"
        f"| {args.players:,} | {seconds:.2f} | {rate:,.0f} |"
    )
    print(f"\n{machine_line(machine)}\n{command_line()}\n\n{table}\n", flush=True)
    path = write_json(
        "freeze",
        utc_stamp(started),
        {
            "benchmark": "freeze",
            "started_at": started.isoformat(),
            "command": command_line(),
            "machine": machine,
            "code": code.info,
            "config": vars(args),
            "freeze": {"players": args.players, "seconds": round(seconds, 3), "players_per_second": round(rate)},
        },
    )
    print(f"results: {path.relative_to(RESULTS_DIR.parent.parent)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.freeze", description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--board", default="rating")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--code", metavar="REV|DIR")
    args = parser.parse_args(argv)
    return run_benchmark(args, run)


if __name__ == "__main__":
    sys.exit(main())
