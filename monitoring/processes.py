"""The processes `make run` supervises (scripts/run.py), as its state file says.

The supervisor rewrites a small JSON file (``LEADERBOARD_PROCESS_STATE``) at every change and
every second: which process is up, its restarts, why it last exited. A file, not Redis, because
Redis may be the thing that is down while a process is being restarted. Not run by the
supervisor (a test, a deployment under systemd or Kubernetes): no file, nothing reported here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

# The supervisor stamps the file every second: this much older and it is gone or stuck.
STALE_SECONDS = 10.0


@dataclass(frozen=True)
class Process:
    name: str
    up: bool
    restarts: int
    last_exit: str | None
    down_since: float | None
    restart_in_seconds: float | None


@dataclass(frozen=True)
class Supervised:
    processes: list[Process]
    age: float  # seconds since the supervisor last wrote the file

    @property
    def fresh(self) -> bool:
        return self.age <= STALE_SECONDS


def state_file() -> Path | None:
    return Path(settings.PROCESS_STATE_FILE) if settings.PROCESS_STATE_FILE else None


def processes_read(*, now: float | None = None) -> Supervised | None:
    """What the supervisor last wrote, or None when this process is not supervised (no file named,
    or none written: the supervisor stopped and removed it). Raises ValueError on a torn file."""
    path = state_file()
    if path is None:
        return None
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    now = time.time() if now is None else now
    processes = [
        Process(
            name=name,
            up=bool(p["up"]),
            restarts=int(p["restarts"]),
            last_exit=p.get("last_exit"),
            down_since=p.get("down_since"),
            restart_in_seconds=p.get("restart_in_seconds"),
        )
        for name, p in sorted(raw["processes"].items())
    ]
    return Supervised(processes, max(0.0, now - float(raw["updated_at"])))


def processes_health(supervised: Supervised, *, now: float | None = None) -> str:
    """ "ok", or which processes are down and why (for /healthz)."""
    if not supervised.fresh:
        return f"unknown: the supervisor last wrote its state {supervised.age:.0f} s ago"
    now = time.time() if now is None else now
    down = []
    for p in supervised.processes:
        if p.up:
            continue
        since = f", down {now - p.down_since:.0f} s" if p.down_since is not None else ""
        again = f", restarting in {p.restart_in_seconds:.0f} s" if p.restart_in_seconds is not None else ""
        down.append(f"{p.name} ({p.last_exit}{since}{again})")
    return "down: " + "; ".join(down) if down else "ok"
