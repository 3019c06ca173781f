"""Where the CPU went during a measurement (Linux /proc): the server under test, Postgres,
Redis, this process and everything else, in cores used on average.

On a small machine the load generator and the databases share the CPUs with the server, so
a throughput figure means little without this split.

/proc is sampled periodically. A process that ends during the window (the Postgres backend of
a short-lived connection) is counted through its parent, which reaps it and so inherits its CPU
time (cutime/cstime): it lands in the parent's group. All Postgres backends are children of the
postmaster, so the short-lived backends of other databases land in `postgres` too."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
GROUPS = ("server", "projector", "celery", "postgres", "redis", "self", "other")
# Process groups of the background processes (bench.server.background() registers them):
# process group id -> the group their CPU counts in ("projector", "celery").
BACKGROUND: dict[int, str] = {}
OTHER_CORES_LIMIT = 0.25  # other work's CPU during a window above which a read scenario runs again


@dataclass(frozen=True)
class _Proc:
    comm: str
    ppid: int
    pgrp: int
    start: int  # start time in ticks since boot: tells a reused pid from the process it replaced
    ticks: int  # utime + stime
    child_ticks: int  # cutime + cstime: the CPU of the children it has reaped


def _stat(pid: int | str) -> tuple[str, list[str]]:
    """/proc/<pid>/stat: comm, in parentheses (it may hold spaces), and the fields after it."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.index("(") + 1 : raw.rindex(")")], raw[raw.rindex(")") + 2 :].split()


def _processes() -> dict[int, _Proc]:
    out: dict[int, _Proc] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm, fields = _stat(entry.name)
        except OSError:
            continue  # gone meanwhile
        out[int(entry.name)] = _Proc(
            comm=comm,
            ppid=int(fields[1]),
            pgrp=int(fields[2]),
            start=int(fields[19]),
            ticks=int(fields[11]) + int(fields[12]),
            child_ticks=int(fields[13]) + int(fields[14]),
        )
    return out


def process_seconds(pid: int) -> float:
    """CPU seconds (user + system) one process has used so far."""
    fields = _stat(pid)[1]
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    """A process's resident memory (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def busy_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine from the first line of /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])  # without guest time, already counted in user
    return total - idle, total


def busy_share(seconds: float = 1.0) -> float:
    """How busy the machine is right now (0-1), sampled over `seconds`."""
    before = busy_ticks()
    time.sleep(seconds)
    after = busy_ticks()
    return (after[0] - before[0]) / max(after[1] - before[1], 1)


def wait_until_quiet(threshold: float, timeout: float, sample: float = 1.0) -> float:
    """Sample the machine's busy share every `sample` seconds until one sample is at most
    `threshold` or `timeout` seconds have passed; return the last sample (0-1)."""
    deadline = time.monotonic() + timeout
    while True:
        busy = busy_share(sample)
        if busy <= threshold or time.monotonic() >= deadline:
            return busy


def _postgres_database(pid: int) -> str | None:
    """The database a Postgres backend serves, from its process title
    (`postgres: [CLUSTER:] USER DATABASE HOST(PORT) STATE`); None for the postmaster and background workers."""
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    if not title.startswith("postgres: "):
        return None
    words = title.removeprefix("postgres: ").split()
    if words and words[0].endswith(":"):  # cluster_name, e.g. Debian's "15/main:"
        words = words[1:]
    if len(words) >= 3 and ("(" in words[2] or words[2] == "[local]"):
        return words[1]
    return None


@dataclass
class _Seen:
    group: str
    pid: int
    ppid: int
    first: tuple[int, int]  # (ticks, child_ticks) at start(), zeros for a process born later
    last: tuple[int, int]


@dataclass
class CpuMeter:
    """Average cores per group between start() and stop(), with tick() called every second or so.

    Groups: `server` (the process group `server_pgid`), `projector` and `celery` (the process
    groups registered in BACKGROUND), `postgres` (the postmaster, its background
    workers, the backends of `database`, and whatever backend ended during the window), `redis`,
    `self` (this process) and `other` (anything else, including long-lived backends of other
    databases); `machine_busy` is the whole machine's busy share (0-1)."""

    server_pgid: int | None = None
    database: str | None = None
    # After stop(): cores of each process of the server's group, busiest first (its own CPU, not
    # its children's): shows how the load spread over the workers.
    server_processes: list[tuple[int, float]] = field(default_factory=list)
    _seen: dict[tuple[int, int], _Seen] = field(default_factory=dict)  # by (pid, start time)
    _started: float = 0.0
    _busy: tuple[int, int] = (0, 0)

    def start(self) -> None:
        self._seen.clear()
        self._started = time.monotonic()
        self._busy = busy_ticks()
        self._scan(initial=True)

    def tick(self) -> None:
        self._scan()

    def stop(self) -> dict[str, float]:
        alive = self._scan()
        seconds = max(time.monotonic() - self._started, 1e-9)
        busy, total = busy_ticks()
        used_ticks = dict.fromkeys(GROUPS, 0)
        alive_pids = {ident[0]: ident for ident in alive}
        for ident, seen in self._seen.items():
            used_ticks[seen.group] += (seen.last[0] - seen.first[0]) + (seen.last[1] - seen.first[1])
            parent = alive_pids.get(seen.ppid)
            if ident not in alive and parent is not None:
                # Reaped by a parent we watch: its whole lifetime is in the parent's child ticks,
                # which already counts what we saw of it.
                used_ticks[self._seen[parent].group] -= seen.last[0] + seen.last[1]
        cores = {name: max(t, 0) / CLOCK_TICKS / seconds for name, t in used_ticks.items()}
        self.server_processes = sorted(
            (
                (seen.pid, round((seen.last[0] - seen.first[0]) / CLOCK_TICKS / seconds, 3))
                for seen in self._seen.values()
                if seen.group == "server"
            ),
            key=lambda item: -item[1],
        )
        machine_busy = (busy - self._busy[0]) / max(total - self._busy[1], 1)
        # A process tree that ends during the window (`timeout pytest ...`) is reaped level by
        # level: the living ancestor that reaps its top inherits the whole tree's lifetime CPU,
        # which the correction above cannot see. Such an ancestor is nearly always in `other`:
        # cap it at what the machine's own counters leave for it.
        residual = machine_busy * (os.cpu_count() or 1) - sum(v for k, v in cores.items() if k != "other")
        cores["other"] = min(cores["other"], max(residual, 0.0))
        result = {name: round(value, 3) for name, value in cores.items()}
        result["machine_busy"] = round(machine_busy, 3)
        return result

    def _scan(self, initial: bool = False) -> set[tuple[int, int]]:
        alive: set[tuple[int, int]] = set()
        for pid, proc in _processes().items():
            ident = (pid, proc.start)
            now = (proc.ticks, proc.child_ticks)
            seen = self._seen.get(ident)
            if seen is None:
                first = now if initial else (0, 0)
                seen = self._seen[ident] = _Seen(self._group(pid, proc), pid, proc.ppid, first, now)
            seen.last = now
            alive.add(ident)
        return alive

    def _group(self, pid: int, proc: _Proc) -> str:
        if self.server_pgid is not None and proc.pgrp == self.server_pgid:
            return "server"
        if proc.pgrp in BACKGROUND:
            return BACKGROUND[proc.pgrp]
        if pid == os.getpid():
            return "self"
        if proc.comm.startswith(("postgres", "postmaster")):
            backend_db = _postgres_database(pid)
            return "postgres" if backend_db is None or backend_db == self.database else "other"
        if proc.comm.startswith("redis-server"):
            return "redis"
        return "other"


def least_disturbed(
    measure: Callable[[], dict[str, Any]], retries: int, label: str, log: Callable[[str], None]
) -> dict[str, Any]:
    """Run `measure` (a dict with "cpu_cores", "requests_per_s", "latency_ms") and again, up to
    `retries` more times, while other work took more than OTHER_CORES_LIMIT cores of the window:
    keep the least disturbed attempt, the others listed under "discarded_attempts"."""
    attempts: list[dict[str, Any]] = []
    while True:
        attempts.append(measure())
        other = attempts[-1]["cpu_cores"].get("other", 0.0)
        if other <= OTHER_CORES_LIMIT or len(attempts) > retries:
            break
        log(f"{label}: other work used {other:.2f} cores during the window; once more")
    best = min(attempts, key=lambda d: d["cpu_cores"].get("other", 0.0))
    best["discarded_attempts"] = [
        {k: d[k] for k in ("requests_per_s", "latency_ms", "cpu_cores")} for d in attempts if d is not best
    ]
    return best
