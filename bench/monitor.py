"""The measured window of a load test seen from outside the server under test: CPU per process
group (bench/cpu.py), Postgres connections, sessions and transactions of the bench database,
Redis commands and, with --profile, a py-spy recording started with the window."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from bench import cpu
from bench.environment import BENCH_DB_NAME, BenchEnv, connect


class ServerMonitor:
    """A loadgen.WindowMonitor: start() at the window's start, tick() during it, stop() at its end."""

    def __init__(
        self, env: BenchEnv, server_pid: int, r: redis.Redis, start_profile: Callable[[], None] = lambda: None
    ) -> None:
        self.cpu = cpu.CpuMeter(server_pgid=server_pid, database=BENCH_DB_NAME)
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
        self.server_rss_bytes = sum(cpu.rss_bytes(pid) for pid, _ in self.cpu.server_processes)
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
