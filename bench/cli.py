"""Command-line pieces shared by the benchmarks."""

from __future__ import annotations

import argparse
from collections.abc import Callable


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
