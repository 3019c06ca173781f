"""The server under test, run as a subprocess exactly as production would run it.

`web` is what `make run` starts: scripts/web.py, the one place defining the web tier (nginx on
the port, HTTP to granian's WSGI workers, /ws/ to uvicorn; uvicorn alone where nginx is
missing); `web-granian` and `web-gunicorn` name its HTTP server behind nginx. `uvicorn` (Django's ASGI handler for everything) and `gunicorn` (sync workers, no
proxy) are single servers, measured for comparison. Each runs in its own process group, so
stopping it also stops the processes it started."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType

from bench import cpu
from bench.environment import VENV_BIN, BenchEnv, BenchError

STOP_GRACE_SECONDS = 10.0


def _uvicorn(port: int, workers: int) -> list[str]:
    return [
        str(VENV_BIN / "uvicorn"),
        "leaderboard_project.asgi:application",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--workers", str(workers),
        "--no-access-log",
        "--log-level", "warning",
    ]  # fmt: skip


def _gunicorn(port: int, workers: int) -> list[str]:
    return [
        str(VENV_BIN / "gunicorn"),
        "leaderboard_project.wsgi:application",
        "-w", str(workers),
        "-k", "sync",
        "--bind", f"127.0.0.1:{port}",
        "--log-level", "warning",
    ]  # fmt: skip


def _web(port: int, workers: int, *extra: str) -> list[str]:
    """scripts/web.py of the measured tree (the ServerProcess runs in code_dir)."""
    return [str(VENV_BIN / "python"), "-u", "scripts/web.py", "--port", str(port), "--workers", str(workers), *extra]


SERVERS: dict[str, Callable[[int, int], list[str]]] = {
    "web": _web,
    # the web tier with each HTTP server behind nginx, to compare them in one run
    "web-granian": lambda port, workers: _web(port, workers, "--http", "granian"),
    "web-gunicorn": lambda port, workers: _web(port, workers, "--http", "gunicorn"),
    "uvicorn": _uvicorn,
    "gunicorn": _gunicorn,
}
DEFAULT_SERVER = "web"  # what `make run` starts


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """`with ServerProcess("uvicorn", env) as server:` starts it and waits for /healthz 200."""

    def __init__(
        self,
        name: str,
        env: BenchEnv,
        workers: int = 2,
        ready_timeout: float = 60.0,
        extra_env: Mapping[str, str] | None = None,
    ) -> None:
        if name not in SERVERS:
            raise BenchError(f"unknown server {name!r}; choose from {', '.join(SERVERS)}")
        self.name = name
        self.env = env
        self.workers = workers
        self.extra_env = dict(extra_env or {})  # on top of env.process_env(): settings module, throttles...
        self.ready_timeout = ready_timeout
        self.port = free_port()
        self.command = SERVERS[name](self.port, workers)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = Path(tempfile.gettempdir()) / f"leaderboard-bench-{name}-{self.port}.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        with open(self.log_path, "wb") as log_file:
            self.proc = subprocess.Popen(
                self.command,
                cwd=self.env.code_dir,
                env=self.env.process_env(**self.extra_env),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: workers included in stop()
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with {self.proc.returncode} before /healthz:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
                    last = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}: {exc.read()[:200]!r}"
            except OSError as exc:
                last = str(exc)
            time.sleep(0.2)
        raise BenchError(f"{self.name} did not answer /healthz 200 within {self.ready_timeout:.0f} s ({last})")

    def stop(self) -> None:
        """SIGTERM to the whole process group, SIGKILL after a grace period."""
        if self.proc is None:
            return
        self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while time.monotonic() < deadline and self._group_alive():
            time.sleep(0.1)
        if self._group_alive():
            self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        # An empty log says nothing; one with errors stays for `log_tail()` readers and humans.
        with contextlib.suppress(OSError):
            if self.log_path.stat().st_size == 0:
                self.log_path.unlink()

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def _group_alive(self) -> bool:
        assert self.proc is not None
        self.proc.poll()  # reap the leader so a zombie does not count
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def log_tail(self, lines: int = 20) -> str:
        try:
            tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n".join([f"(last {lines} lines of {self.log_path})", *tail])


class ProcessGroup:
    """A long-running subprocess in its own process group (Celery forks workers): stop() ends them all."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.command = cmd
        self.log_path = Path(tempfile.gettempdir()) / f"leaderboard-bench-{name}-{os.getpid()}.log"
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # forked workers that outlived their parent


def background_commands(schedule_dir: Path, *, celery: bool = True, projectors: int = 1) -> dict[str, list[str]]:
    """The processes `make run` starts beside the web tier (scripts/run.py): the projector(s)
    (each owning an equal share of the lanes), and the Celery worker and beat."""
    from scores.locks import LANES  # importable without Django's settings

    commands: dict[str, list[str]] = {}
    share = -(-LANES // projectors)
    for i in range(projectors):
        first, last = i * share, min(LANES, (i + 1) * share) - 1
        commands[f"projector{i if projectors > 1 else ''}"] = [
            str(VENV_BIN / "python"), "manage.py", "projector", "--lanes", f"{first}-{last}",
        ]  # fmt: skip
    if celery:
        commands["worker"] = [str(VENV_BIN / "celery"), "-A", "leaderboard_project", "worker", "--loglevel", "WARNING",
                              "--concurrency", "2"]  # fmt: skip
        commands["beat"] = [str(VENV_BIN / "celery"), "-A", "leaderboard_project", "beat", "--loglevel", "WARNING",
                            "--schedule", str(schedule_dir / "celerybeat-schedule")]  # fmt: skip
    return commands


@contextlib.contextmanager
def background(
    env: BenchEnv, extra_env: Mapping[str, str], *, celery: bool = True, projectors: int = 1
) -> Iterator[list[str]]:
    """The projector(s), and a Celery worker and beat, for the whole HTTP phase: the projector
    applies what ingest stores, the worker runs the after-the-fact anti-cheat checks and live
    flushes, beat the outbox job. Yields the command lines."""
    schedule_dir = Path(tempfile.mkdtemp(prefix="leaderboard-bench-beat-"))
    commands = background_commands(schedule_dir, celery=celery, projectors=projectors)
    process_env = env.process_env(**extra_env)
    started = [ProcessGroup(name, cmd, process_env, env.code_dir) for name, cmd in commands.items()]
    for group in started:  # their CPU is metered apart (bench/cpu.py)
        cpu.BACKGROUND[group.proc.pid] = "projector" if group.name.startswith("projector") else "celery"
    try:
        yield [" ".join(cmd[1:]) for cmd in commands.values()]
    finally:
        for group in started:
            cpu.BACKGROUND.pop(group.proc.pid, None)
            group.stop()
        shutil.rmtree(schedule_dir, ignore_errors=True)
