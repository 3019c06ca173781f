"""The server under test, run as a subprocess exactly as production would run it.

`web` is what `make run` starts: scripts/web.py, the one place defining the web tier (nginx on
the port, HTTP to granian's WSGI workers, /ws/ to uvicorn; uvicorn alone where nginx is
missing); `uvicorn` is its uvicorn topology, one process serving both (bench/websockets.py
measures what one such process holds: its CPU and memory, unmixed with nginx and granian).
Each runs in its own process group, so stopping it also stops the processes it started."""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from bench import monitor
from bench.environment import VENV_BIN, BenchEnv, BenchError
from scripts import services, web
from scripts.run import celery_workers, venv_cmd

STOP_GRACE_SECONDS = 10.0


def server_command(name: str, port: int, workers: int) -> list[str]:
    """scripts/web.py of the measured tree (the server runs in its code_dir), or its uvicorn alone."""
    if name == "uvicorn":
        [(_, argv)] = web.commands("uvicorn", port, workers, run_dir=Path(), nginx=None)
        return argv
    return [str(VENV_BIN / "python"), "-u", "scripts/web.py", "--port", str(port), "--workers", str(workers)]


def http_request(
    port: int, method: str, path: str, body: bytes = b"", headers: Sequence[tuple[str, str]] = (), timeout: float = 35
) -> tuple[int, bytes]:
    """One request to 127.0.0.1:`port` on a connection of its own: (status, body), or (0, b"")
    when nothing answered, or nothing HTTP."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body or None, headers={"Content-Type": "application/json", **dict(headers)})
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        conn.close()


class ProcessGroup:
    """A long-running subprocess in its own process group (the web tier and Celery fork workers):
    stop() ends them all."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path, log_path: Path | None = None) -> None:
        self.name = name
        self.command = cmd
        self.log_path = log_path or Path(tempfile.gettempdir()) / f"leaderboard-bench-{name}-{os.getpid()}.log"
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, signum: int = signal.SIGTERM, grace: float = 15.0) -> None:
        """`signum` to the group, SIGKILL to whatever of it is left after `grace` seconds (forked
        workers that outlived their parent included)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self._alive():
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def _alive(self) -> bool:
        self.proc.poll()  # reap the leader so a zombie does not count
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def log_tail(self, lines: int = 20) -> str:
        try:
            tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n".join([f"(last {lines} lines of {self.log_path})", *tail])


class ServerProcess:
    """`with ServerProcess("web", env) as server:` starts it and waits for /healthz 200."""

    def __init__(
        self,
        name: str,
        env: BenchEnv,
        workers: int = 2,
        ready_timeout: float = 60.0,
        extra_env: Mapping[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.name = name
        self.env = env
        self.extra_env = dict(extra_env or {})  # on top of env.process_env(): settings module, throttles...
        self.ready_timeout = ready_timeout
        # outside the kernel's ephemeral range: polling a server not yet listening on a port inside
        # it can connect the poller to itself (scripts/services.py, LOCAL_PG_PORT)
        self.port = port or services.spare_port()
        self.command = server_command(name, self.port, workers)
        self.group: ProcessGroup | None = None

    @property
    def pid(self) -> int:
        assert self.group is not None
        return self.group.pid

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        log_path = Path(tempfile.gettempdir()) / f"leaderboard-bench-{self.name}-{self.port}.log"
        log_path.unlink(missing_ok=True)
        env = self.env.process_env(**self.extra_env)
        self.group = ProcessGroup(self.name, self.command, env, self.env.code_dir, log_path)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        assert self.group is not None
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if self.group.proc.poll() is not None:
                raise BenchError(
                    f"{self.name} exited with {self.group.proc.returncode} before /healthz:\n{self.log_tail()}"
                )
            status, body = http_request(self.port, "GET", "/healthz", timeout=2)
            if status == 200:
                return
            if status:
                last = f"HTTP {status}: {body[:200]!r}"
            time.sleep(0.2)
        raise BenchError(f"{self.name} did not answer /healthz 200 within {self.ready_timeout:.0f} s ({last})")

    def stop(self) -> None:
        if self.group is None:
            return
        self.group.stop(grace=STOP_GRACE_SECONDS)
        # An empty log says nothing; one with errors stays for `log_tail()` readers and humans.
        with contextlib.suppress(OSError):
            if self.group.log_path.stat().st_size == 0:
                self.group.log_path.unlink()

    def log_tail(self) -> str:
        return self.group.log_tail() if self.group is not None else ""


def background_commands(
    schedule_dir: Path, *, celery: bool = True, projectors: int = 1, append: bool = True
) -> dict[str, list[str]]:
    """The processes `make run` starts beside the web tier (scripts/run.py): the append service
    (group commit: scores/ingest/gather.py), the projector(s) (each owning an equal share of the
    lanes), and the Celery worker and beat."""
    from scores.locks import LANES  # importable without Django's settings

    commands: dict[str, list[str]] = {}
    if append:
        commands["append"] = venv_cmd("python", "manage.py append_service")
    share = -(-LANES // projectors)
    for i in range(projectors):
        first, last = i * share, min(LANES, (i + 1) * share) - 1
        commands[f"projector{i if projectors > 1 else ''}"] = venv_cmd(
            "python", f"manage.py projector --lanes {first}-{last}"
        )
    if celery:
        for name, args in celery_workers("WARNING").items():  # as `make run` starts them
            commands[name] = venv_cmd("celery", args)
        schedule = str(schedule_dir / "celerybeat-schedule")
        commands["beat"] = venv_cmd("celery", "-A leaderboard_project beat --loglevel WARNING --schedule", schedule)
    return commands


@contextlib.contextmanager
def background(
    env: BenchEnv, extra_env: Mapping[str, str], *, celery: bool = True, projectors: int = 1
) -> Iterator[list[str]]:
    """The projector(s), and a Celery worker and beat, for the whole HTTP phase: the projector
    applies what ingest stores, the worker runs the after-the-fact anti-cheat checks and live
    flushes, beat the outbox job. Yields the command lines."""
    schedule_dir = Path(tempfile.mkdtemp(prefix="leaderboard-bench-beat-"))
    append = extra_env.get("WEB_APPEND_SERVICE") == "1"
    commands = background_commands(schedule_dir, celery=celery, projectors=projectors, append=append)
    process_env = env.process_env(**extra_env)
    started = [ProcessGroup(name, cmd, process_env, env.code_dir) for name, cmd in commands.items()]
    for group in started:  # their CPU is metered apart (bench/monitor.py); the append service is the web tier's
        monitor.BACKGROUND[group.proc.pid] = (
            "projector" if group.name.startswith("projector") else "server" if group.name == "append" else "celery"
        )
    try:
        yield [" ".join(cmd[1:]) for cmd in commands.values()]
    finally:
        for group in started:
            monitor.BACKGROUND.pop(group.proc.pid, None)
            group.stop()
        shutil.rmtree(schedule_dir, ignore_errors=True)
