"""What a result was measured on: machine, software versions, command line (the code: bench/code.py)."""

from __future__ import annotations

import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

import psycopg
import redis


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
