"""Command-line pieces shared by the benchmarks: the flags several of them take (one spelling,
one meaning each), their bounds, and the run every benchmark shares."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

# name -> argparse keywords; "{default}" in a help text is filled with the benchmark's default
RUN_FLAGS: dict[str, dict[str, Any]] = {
    "players": {"type": int, "default": 1_000_000, "help": "players on the board, p1..pN (default {default:,})"},
    "seconds": {"type": float, "default": 15.0, "help": "measured seconds per scenario (default {default:g})"},
    "warmup": {"type": float, "default": 2.0, "help": "unmeasured seconds before each (default {default:g})"},
    "concurrency": {"type": int, "default": 32, "help": "closed-loop connections (default {default})"},
    "batch-size": {"type": int, "default": 1000, "help": "matches per batch request, 1-1000 (default {default})"},
    "workers": {"type": int, "default": 2, "help": "HTTP worker processes of a server (default {default})"},
    "board": {"default": "rating", "help": "board of bench/game.toml (default {default})"},
    "token-pool": {"type": int, "default": 2000, "help": "players the rank scenarios read (default {default})"},
    "friend-players": {"type": int, "default": 500, "help": "players with a friend list (default {default})"},
    "friends": {"type": int, "default": 200, "help": "friends each of them has (default {default})"},
    "throttle-rate": {
        "default": "100000000/min",
        "help": "THROTTLE_PLAYER_READS and THROTTLE_ADDRESS_READS of the servers (raised; default {default})",
    },
    "seed": {"type": int, "default": 42, "help": "random seed of the data (default {default})"},
    "timeout": {
        "type": float,
        "default": 60.0,
        "help": "seconds before a request counts as timed out (default {default:g})",
    },
    "stagger": {
        "type": float,
        "default": 0.01,
        "help": "seconds between the starts of two connections (default {default:g}; see bench/loadgen.py)",
    },
    "quiet-wait": {
        "type": float,
        "default": 60.0,
        "help": "seconds to wait before each scenario for the machine to be under 20%% busy (default {default:g})",
    },
    "retries": {
        "type": int,
        "default": 1,
        "help": "reruns of a read scenario that other work took over 0.25 cores from (default {default})",
    },
    "profile": {"choices": ("cpu", "wall"), "help": "record what is measured with py-spy (it slows it)"},
    "code": {
        "metavar": "REV|DIR",
        "help": "measure this git revision (exported with git archive) or checkout instead of the working tree",
    },
}


def bench_parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's parser: `python -m <prog> --help` shows its docstring's first paragraph."""
    return argparse.ArgumentParser(
        prog=prog, description=(doc or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_run_args(parser: argparse.ArgumentParser, *names: str, **defaults: Any) -> None:
    """Add the shared flags `names` (RUN_FLAGS' keys) to a benchmark's parser, with the
    benchmark's own defaults where given (`seconds=20.0`, `quiet_wait=180.0`)."""
    for name in names:
        spec = dict(RUN_FLAGS[name])
        dest = name.replace("-", "_")
        if dest in defaults:
            spec["default"] = defaults.pop(dest)
        if "help" in spec and "default" in spec:
            spec["help"] = spec["help"].format(default=spec["default"])
        parser.add_argument(f"--{name}", **spec)
    if defaults:
        raise TypeError(f"defaults for flags not added: {', '.join(defaults)}")


def check_run_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The shared flags' bounds, for those the benchmark took: a usage error before any work."""
    given = vars(args)
    for dest in ("players", "seconds", "concurrency", "token_pool", "friend_players", "friends"):
        if dest in given and given[dest] <= 0:
            parser.error(f"--{dest.replace('_', '-')} must be positive")
    if given.get("warmup", 0) < 0:
        parser.error("--warmup must not be negative")
    if "batch_size" in given and not 1 <= args.batch_size <= 1000:
        parser.error("--batch-size must be 1-1000 (docs/api.md §4)")
    if "friends" in given and args.players <= args.friend_players + args.friends:
        parser.error("--players must exceed --friend-players + --friends (friends are drawn among the others)")


def csv_choices(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated, non-empty list of names among `choices`."""

    def parse(text: str) -> list[str]:
        items = [s.strip() for s in text.split(",") if s.strip()]
        unknown = [s for s in items if s not in choices]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)} (got {text!r})")
        return items

    return parse


def run_benchmark(args: argparse.Namespace, run: Callable[..., int], *, wait: bool = False) -> int:
    """Run one benchmark against the code it was asked to measure, in the bench environment;
    the exit status every benchmark shares (1: a bench error, 130: interrupted)."""
    from bench.code import code_tree
    from bench.environment import BenchError, bench_environment, log

    try:
        with code_tree(args.code) as code, bench_environment(code.path, wait=wait) as env:
            return run(args, env, code)
    except BenchError as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
