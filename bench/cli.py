"""Command-line pieces shared by the benchmarks: the flags several of them take (one spelling,
one meaning each) and the run every benchmark shares."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

# name -> argparse keywords; "{default}" in a help text is filled with the benchmark's default
RUN_FLAGS: dict[str, dict[str, Any]] = {
    "players": {"type": int, "default": 1_000_000, "help": "players on the board, p1..pN (default {default:,})"},
    "seconds": {"type": float, "default": 15.0, "help": "measured seconds per scenario (default {default:g})"},
    "batch-size": {"type": int, "default": 1000, "help": "matches per batch request, 1-1000 (default {default})"},
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
