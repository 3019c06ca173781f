"""Output shared by the benchmarks: what a result was measured on (machine, versions, command
line; the code: bench/environment.py), percentiles, markdown tables, JSON result files."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench.environment import BENCH_DIR, CodeTree

RESULTS_DIR = BENCH_DIR / "results"


def _proc_field(path: str, name: str) -> str | None:
    """The value of `name:` in a /proc file like /proc/cpuinfo (None where there is none)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def command_line() -> str:
    """The command exactly as started (interpreter and flags included)."""
    return shlex.join(getattr(sys, "orig_argv", sys.argv))


def machine_info(pg: psycopg.Connection, r: redis.Redis) -> dict[str, Any]:
    redis_info = r.info("server")
    ram = _proc_field("/proc/meminfo", "MemTotal")  # "16314784 kB"
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "ram_bytes": int(ram.split()[0]) * 1024 if ram else None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "postgres": pg.execute("SHOW server_version").fetchone()[0],  # type: ignore[index]
        "redis": redis_info.get("redis_version"),
    }


def machine_line(info: dict[str, Any]) -> str:
    ram = info["ram_bytes"]
    ram_text = f"{ram / 2**30:.1f} GiB" if ram else "? GiB"
    return (
        f"{info['nproc']} CPU ({info['cpu_model']}), {ram_text} RAM, Python {info['python']}, "
        f"PostgreSQL {info['postgres']}, Redis {info['redis']}"
    )


def utc_stamp(moment: datetime | None = None) -> str:
    """`20261129T194608Z`: sorts by time, safe in a file name."""
    return (moment or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending sequence (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def ms(seconds: float | None) -> float | None:
    """Seconds as milliseconds rounded to 0.01 (None stays None)."""
    return None if seconds is None else round(seconds * 1000, 2)


def latency_ms(values: Sequence[float]) -> dict[str, float | None]:
    """p50, p95, p99, max and mean of latencies in seconds, as milliseconds."""
    ordered = sorted(values)
    return {
        "p50": ms(percentile(ordered, 50)),
        "p95": ms(percentile(ordered, 95)),
        "p99": ms(percentile(ordered, 99)),
        "max": ms(ordered[-1] if ordered else None),
        "mean": ms(sum(ordered) / len(ordered) if ordered else None),
    }


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table; numbers are right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [bool(rows) and all(isinstance(r[i], int | float) for r in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric, strict=True))
        + "|"
    )
    return "\n".join([line(list(headers)), rule, *(line(r) for r in cells)])


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """`payload` as `path`, written whole or not at all (bench/results/*.tmp is git-ignored)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path


def report_results(
    kind: str, text: str, *, started: datetime, machine: dict[str, Any], code: CodeTree, args: argparse.Namespace,
    **extra: Any,
) -> Path:  # fmt: skip
    """A focused benchmark's end: its tables printed under the machine and the command line,
    and bench/results/<kind>-<stamp>.json written with what every result file starts with (the
    benchmark, when, the command, the machine, the code measured, its flags) and `extra`."""
    print(f"\n{machine_line(machine)}\n{command_line()}\n\n{text}\n", flush=True)
    payload = {"benchmark": kind, "started_at": started.isoformat(), "command": command_line(), "machine": machine,
               "code": code.info, "config": dict(vars(args)), **extra}  # fmt: skip
    path = write_json(RESULTS_DIR / f"{kind}-{utc_stamp(started)}.json", payload)
    print(f"results: {path.relative_to(RESULTS_DIR.parent.parent)}")
    return path


class Laps:
    """Seconds between successive marks, by name: `mark("copy")` records the time since the
    previous mark (or since creation); a name marked again adds up."""

    def __init__(self, digits: int = 3) -> None:
        self.seconds: dict[str, float] = {}
        self._digits = digits
        self._last = time.perf_counter()

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, self._digits)
        self._last = now
