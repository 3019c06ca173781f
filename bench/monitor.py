"""The measured window of a load test seen from outside the server under test (Linux /proc,
Postgres, Redis): CPU per process group, in cores used on average, Postgres connections,
sessions and transactions of the bench database, Redis commands and, with --profile, a py-spy
recording started with the window.

On a small machine the load generator and the databases share the CPUs with the server, so a
throughput figure means little without the CPU split: the server under test, the projector,
Celery, Postgres, Redis, this process and everything else.

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

import redis

from bench.environment import BENCH_DB_NAME, BenchEnv, connect

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
GROUPS = ("server", "projector", "celery", "postgres", "redis", "self", "other")
# Process groups of the background processes (bench.server.background() registers them):
# process group id -> the group their CPU counts in ("projector", "celery").
BACKGROUND: dict[int, str] = {}


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


def busy_share(seconds: float) -> float:
    """How busy the machine is right now (0-1), sampled over `seconds`."""
    before = busy_ticks()
    time.sleep(seconds)
    after = busy_ticks()
    return (after[0] - before[0]) / max(after[1] - before[1], 1)


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
    workers, the bench database's backends, and whatever backend ended during the window), `redis`,
    `self` (this process) and `other` (anything else, including long-lived backends of other
    databases); `machine_busy` is the whole machine's busy share (0-1)."""

    server_pgid: int
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
        if proc.pgrp == self.server_pgid:
            return "server"
        if proc.pgrp in BACKGROUND:
            return BACKGROUND[proc.pgrp]
        if pid == os.getpid():
            return "self"
        if proc.comm.startswith(("postgres", "postmaster")):
            backend_db = _postgres_database(pid)
            return "postgres" if backend_db is None or backend_db == BENCH_DB_NAME else "other"
        if proc.comm.startswith("redis-server"):
            return "redis"
        return "other"


class ServerMonitor:
    """A loadgen.WindowMonitor: start() at the window's start, tick() during it, stop() at its end."""

    def __init__(
        self, env: BenchEnv, server_pid: int, r: redis.Redis, start_profile: Callable[[], None] = lambda: None
    ) -> None:
        self.cpu = CpuMeter(server_pid)
        # Opened now: once the server exhausts max_connections, a new connection would fail.
        self.pg = connect(env)
        self.redis = r
        self.start_profile = start_profile
        self.cores: dict[str, float] = {}
        self.peak_bench_connections = 0
        self.peak_all_connections = 0
        self.server_rss_bytes = 0  # resident memory of the server's processes at the window's end
        self._at_start = self._at_stop = (0, 0, 0)

    def _counters(self) -> tuple[int, int, int]:
        """(sessions opened, transactions committed or rolled back) of the bench database so far,
        and the commands Redis has processed.

        Every statement of an autocommit connection is a transaction: for a read-only server
        that does not open transactions, transactions are its SQL queries. This monitor's own
        queries are a handful per window."""
        self.pg.execute("SELECT pg_stat_clear_snapshot()")
        row = self.pg.execute(
            "SELECT sessions, xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (BENCH_DB_NAME,)
        ).fetchone()
        sessions, transactions = (int(row[0]), int(row[1])) if row else (0, 0)
        return sessions, transactions, int(self.redis.info("stats")["total_commands_processed"])

    def _connections(self) -> None:
        ours, total = self.pg.execute(
            "SELECT count(*) FILTER (WHERE datname = %s), count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'",
            (BENCH_DB_NAME,),
        ).fetchone()  # type: ignore[misc]
        self.peak_bench_connections = max(self.peak_bench_connections, ours - 1)  # not this monitor's own
        self.peak_all_connections = max(self.peak_all_connections, total)

    def start(self) -> None:
        self._at_start = self._counters()
        self.cpu.start()
        self.start_profile()

    def tick(self) -> None:
        self.cpu.tick()
        self._connections()

    def stop(self) -> None:
        self.cores = self.cpu.stop()
        self.server_rss_bytes = sum(rss_bytes(pid) for pid, _ in self.cpu.server_processes)
        self.cores["loadgen"] = self.cores.pop("self")
        self._connections()
        self._at_stop = self._counters()

    def close(self) -> None:
        self.pg.close()

    def figures(self, requests: int) -> dict[str, Any]:
        """The window's figures as the suite reports them; `requests` is how many completed in it.
        Redis' commands are the whole server's in the window: every db (others' work included),
        and every command a Lua script ran counted as well as the EVALSHA that ran it."""
        sessions, transactions, commands = (
            end - start for start, end in zip(self._at_start, self._at_stop, strict=True)
        )

        def per_request(count: int, digits: int) -> float | None:
            return round(count / requests, digits) if requests else None

        return {
            "cpu_cores": self.cores,
            "server_process_cores": self.cpu.server_processes,
            "server_rss_bytes": self.server_rss_bytes,
            "postgres": {
                "peak_bench_connections": self.peak_bench_connections,
                "peak_all_connections": self.peak_all_connections,
                "sessions_opened": sessions,
                "sessions_per_request": per_request(sessions, 3),
                "transactions": transactions,
                "transactions_per_request": per_request(transactions, 3),
            },
            "redis": {"commands": commands, "commands_per_request": per_request(commands, 2)},
        }
