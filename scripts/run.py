#!/usr/bin/env python3
"""`make run`: the whole service in the foreground, honcho-style.

Finds or starts PostgreSQL and Redis (scripts/services.py), migrates, loads the demo game
(unless ``DEMO=0``), then supervises web (scripts/web.py: nginx on PORT, HTTP to gunicorn's sync
workers, /ws/ to uvicorn; the same command the benchmarks start), the append service (group
commit for single submissions: scores/ingest/gather.py), the projector (applies stored
matches to values and boards), the Celery worker and beat, and the demo traffic, printing their output line by line behind a ``name |`` prefix.

Ctrl-C, or SIGINT / SIGTERM / SIGHUP to us or to `make`, stops every child (each in its own
process group, so workers forked by uvicorn or Celery go too) and the servers this run started.

A child that exits on its own (a crash, kill -9, the Celery worker's unrecoverable broker error)
is restarted, the rest keep serving: a line says which and why, what is left of its process group
is stopped first (nginx and gunicorn outlive a killed scripts/web.py), and it starts again after
a backoff (``RUN_RESTART_BACKOFF`` s, 1 by default, doubling after each exit that came within
``STABLE_SECONDS`` of its start, at most ``RUN_RESTART_BACKOFF_MAX``, 30). The state of every
process (up, pid, restarts, last exit) is kept in a JSON file, ``LEADERBOARD_PROCESS_STATE``
(default .local/run/processes.json), rewritten at each change and every second: /healthz and
/metrics read it (monitoring/processes.py), so they still tell the truth while Redis is the
thing that is down (docs/operations.md, "Processes").

Environment: ``PORT`` (default 8000), ``DEMO`` (``0`` skips demo data and traffic),
``WEB_WORKERS`` / ``WEB_TOPOLOGY`` / ``WEB_THREADS`` (scripts/web.py), ``WEB_APPEND_SERVICE``
(``0``: no append service, each request stores its own single match; docs/operations.md), and ``DATABASE_URL`` / ``REDIS_URL`` as
scripts/services.py reads them.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
from scripts import services  # noqa: E402  (needs the repo root on sys.path first)

# The virtualenv's bin/: `make run` starts us as .venv/bin/python (not resolved: a venv's
# python is a symlink to the base interpreter, whose bin/ has no uvicorn).
VENV_BIN = Path(sys.executable).parent
SHUTDOWN_GRACE_SECONDS = 10.0
WEB_READY_TIMEOUT_SECONDS = 60.0
# A child that ran this long before it exited starts again after the first backoff; one that
# exits sooner waits twice as long as last time (a crash loop does not spin).
STABLE_SECONDS = 30.0
STATE_FILE_ENV = "LEADERBOARD_PROCESS_STATE"
STATE_EVERY_SECONDS = 1.0
COLORS = ("36", "33", "32", "35", "34", "96")


class Stop(Exception):
    """A stop signal arrived before supervision began."""


def _raise_stop(signum: int, _frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


class Output:
    """Serialised, prefixed, line-at-a-time output (`web    | ...`)."""

    def __init__(self, names: list[str]) -> None:
        self._lock = threading.Lock()
        self._width = max(len(n) for n in names)
        colored = sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
        self._colors = dict(zip(names, itertools.cycle(COLORS), strict=False)) if colored else {}

    def line(self, name: str, text: str) -> None:
        prefix = f"{name:<{self._width}} |"
        if name in self._colors:
            prefix = f"\033[{self._colors[name]}m{prefix}\033[0m"
        with self._lock:
            sys.stdout.write(f"{prefix} {text}\n")
            sys.stdout.flush()


class ParentWatch:
    """Notices a stop signal sent to `make` alone, or `make` going away.

    Ctrl-C at a terminal signals the whole foreground group, us included, and GNU make passes
    SIGTERM on to its recipe; but `kill -INT <make>` (or HUP, QUIT) reaches make only, which then
    waits for us forever. Make resets such a signal to its default action when it arrives, so it
    shows as the signal leaving the "caught" mask in /proc/<make>/status (Linux only).
    """

    WATCHED = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)

    def __init__(self) -> None:
        self.ppid = os.getppid()
        self.baseline = self._caught() if self._parent_is_make() else 0

    def _parent_is_make(self) -> bool:
        try:
            return Path(f"/proc/{self.ppid}/comm").read_text().strip() in ("make", "gmake")
        except OSError:
            return False

    def _caught(self) -> int:
        try:
            for line in Path(f"/proc/{self.ppid}/status").read_text().splitlines():
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16)
        except (OSError, ValueError):
            pass
        return 0

    def reason(self) -> str | None:
        """Why we should stop, if the parent says so."""
        if os.getppid() != self.ppid:
            return "parent process exited"
        if self.baseline:
            caught = self._caught()
            for signum in self.WATCHED:
                bit = 1 << (signum - 1)
                if self.baseline & bit and not caught & bit:
                    return f"{signum.name} to make"
        return None


@dataclass
class Child:
    name: str
    cmd: list[str]
    proc: subprocess.Popen[bytes]
    env: dict[str, str]
    pump: threading.Thread = field(init=False)
    started_at: float = field(default_factory=time.monotonic)
    restarts: int = 0  # times the supervisor started it again after it exited on its own
    backoff: float = 0.0  # the wait before the next start, once it is down
    last_exit: str | None = None  # why it last exited, as the log line said
    down_since: float | None = None  # wall clock (time.time()): it is down and waits to start again
    restart_at: float | None = None  # monotonic: when it starts again

    @property
    def up(self) -> bool:
        return self.down_since is None

    def group_alive(self) -> bool:
        """True while any process of the child's group (the child or what it forked) is left."""
        self.proc.poll()  # reap the leader, so a zombie does not count
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # alive, just not ours to signal
        return True

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)

    def state(self) -> dict[str, object]:
        return {
            "up": self.up,
            "pid": self.proc.pid if self.up else None,
            "restarts": self.restarts,
            "last_exit": self.last_exit,
            "down_since": self.down_since,
            "restart_in_seconds": (
                round(max(0.0, self.restart_at - time.monotonic()), 1) if self.restart_at is not None else None
            ),
        }


def restart_backoff() -> tuple[float, float]:
    """(first, most) seconds before a child that exited starts again."""
    first = float(os.environ.get("RUN_RESTART_BACKOFF") or "1")
    return first, max(first, float(os.environ.get("RUN_RESTART_BACKOFF_MAX") or "30"))


class Supervisor:
    def __init__(self, env: dict[str, str], out: Output, parent: ParentWatch, state_file: Path) -> None:
        self.env = env
        self.out = out
        self.parent = parent
        self.state_file = state_file
        self.children: dict[str, Child] = {}
        self.stop_reason: str | None = None  # set by a signal handler
        self.force = False  # a second signal: kill at once
        self._state_written = 0.0

    def _spawn(self, cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Own process group: we stop each child's whole group, and Ctrl-C at the terminal
            # reaches only us, so shutdown happens in order.
            start_new_session=True,
        )

    def _pump_start(self, child: Child) -> None:
        child.pump = threading.Thread(target=self._pump, args=(child,), name=f"pump-{child.name}", daemon=True)
        child.pump.start()

    def start(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        env = env or self.env
        child = Child(name, cmd, self._spawn(cmd, env), env)
        self._pump_start(child)
        self.children[name] = child
        self.write_state()

    def _pump(self, child: Child) -> None:
        assert child.proc.stdout is not None
        for raw in iter(child.proc.stdout.readline, b""):
            self.out.line(child.name, raw.decode(errors="replace").rstrip("\r\n"))

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop_reason is not None:
            self.force = True
        self.stop_reason = signal.Signals(signum).name

    def write_state(self) -> None:
        """The processes' state for /healthz and /metrics (monitoring/processes.py), replaced whole."""
        self._state_written = time.monotonic()
        body = {
            "supervisor_pid": os.getpid(),
            "updated_at": time.time(),
            "processes": {name: child.state() for name, child in self.children.items()},
        }
        tmp = self.state_file.with_name(self.state_file.name + ".tmp")
        try:
            tmp.write_text(json.dumps(body))
            tmp.replace(self.state_file)
        except OSError as exc:  # a full disk must not stop the service: monitoring shows the file stale
            self.out.line("run", f"could not write {self.state_file}: {exc}")

    def _down(self, child: Child, code: int) -> None:
        """It exited on its own: clear what is left of its group, then wait out the backoff."""
        child.pump.join(timeout=1)  # flush its last words first
        child.signal_group(signal.SIGTERM)  # its group may live on (scripts/web.py's nginx)
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
        while child.group_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        child.signal_group(signal.SIGKILL)
        first, most = restart_backoff()
        ran = time.monotonic() - child.started_at
        child.backoff = first if ran >= STABLE_SECONDS or not child.backoff else min(most, child.backoff * 2)
        child.last_exit = _describe(code)
        child.down_since = time.time()
        child.restart_at = time.monotonic() + child.backoff
        self.out.line(
            "run",
            f"{child.name} exited unexpectedly ({child.last_exit}) after {ran:.1f} s; "
            f"restarting it in {child.backoff:.0f} s (restarts so far: {child.restarts})",
        )
        self.write_state()

    def _restart(self, child: Child) -> None:
        child.restarts += 1
        child.proc = self._spawn(child.cmd, child.env)
        child.started_at = time.monotonic()
        child.down_since = child.restart_at = None
        self._pump_start(child)
        self.out.line("run", f"{child.name} restarted (pid {child.proc.pid}, restart {child.restarts})")
        self.write_state()

    def supervise(self, port: int, when_ready: Callable[[], None]) -> int:
        """Restart children that exit until a stop signal; call *when_ready* once the web port opens."""
        ready = False
        deadline = time.monotonic() + WEB_READY_TIMEOUT_SECONDS
        while self.stop_reason is None:
            if reason := self.parent.reason():
                self.stop_reason = reason
                break
            for child in list(self.children.values()):
                if child.up and (code := child.proc.poll()) is not None:
                    self._down(child, code)
                elif not child.up and child.restart_at is not None and time.monotonic() >= child.restart_at:
                    self._restart(child)
                if self.stop_reason is not None:
                    break
            if not ready and _accepts(port):
                ready = True
                self.out.line("run", f"web is up: http://127.0.0.1:{port}")
                when_ready()
            if not ready and time.monotonic() > deadline:
                self.out.line("run", f"web did not open port {port} in {WEB_READY_TIMEOUT_SECONDS:.0f}s; stopping")
                return 1
            if time.monotonic() - self._state_written >= STATE_EVERY_SECONDS:
                self.write_state()  # a fresh stamp: readers tell a live supervisor from a dead one
            time.sleep(0.2)
        self.out.line("run", f"{self.stop_reason}: stopping everything")
        return 0

    def shutdown(self) -> None:
        """SIGTERM every child's group, SIGKILL what is left after the grace period."""
        children = list(self.children.values())
        for child in children:
            child.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
        while (alive := [c for c in children if c.group_alive()]) and not self.force:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for child in alive:
            self.out.line("run", f"{child.name} still running after {SHUTDOWN_GRACE_SECONDS:.0f}s: killing it")
            child.signal_group(signal.SIGKILL)
        for child in children:
            child.proc.wait()
            child.pump.join(timeout=2)
        with contextlib.suppress(OSError):
            self.state_file.unlink()  # nothing is supervised any more


def venv_cmd(tool: str, args: str, *extra: str) -> list[str]:
    """A command of the virtualenv's bin/: *args* split on spaces, then *extra* (paths) as they are."""
    return [str(VENV_BIN / tool), *args.split(), *extra]


def append_service_on() -> bool:
    """The append service of group commit (WEB_APPEND_SERVICE, on unless 0)."""
    return os.environ.get("WEB_APPEND_SERVICE", "1").strip() != "0"


def web_command(port: int) -> list[str]:
    """The web tier (HTTP and websockets on one port): scripts/web.py decides its processes."""
    return venv_cmd("python", "-u", str(REPO_ROOT / "scripts" / "web.py"), "--port", str(port))


def _describe(returncode: int) -> str:
    if returncode < 0:
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit code {returncode}"


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _step(out: Output, env: dict[str, str], what: str, cmd: list[str]) -> None:
    """Run a setup command in the foreground, its output unprefixed (demo_load draws a progress bar)."""
    out.line("run", what)
    code = subprocess.run(cmd, cwd=REPO_ROOT, env=env).returncode
    if code != 0:
        raise services.ServiceError(f"`{' '.join(cmd[1:])}` failed ({_describe(code)})")


def background_env(env: dict[str, str]) -> dict[str, str]:
    """The environment of what no request waits on (the Celery workers, beat, the migrations and
    the demo load): Redis may take REDIS_BACKGROUND_SOCKET_TIMEOUT (default 1 s) to answer them,
    for the long pipelines of a rebuild or a load. Web, append and the projector keep
    REDIS_SOCKET_TIMEOUT (0.2 s): a submission waits on them (docs/reliability.md, "Redis hung")."""
    timeout = env.get("REDIS_BACKGROUND_SOCKET_TIMEOUT") or "1.0"
    return {**env, "REDIS_SOCKET_TIMEOUT": timeout}


def celery_workers(level: str) -> dict[str, str]:
    """The Celery workers' arguments by process name (docs/operations.md, "Celery queues and time
    limits"): `worker` serves the default queue (window closes, board upkeep, live flushes,
    anti-cheat checks), `webhooks` the settlement webhooks' own queue alone, so a receiver that
    never answers holds none of the rest. One process there: a run sends to every game at once."""
    return {
        "worker": f"-A leaderboard_project worker -Q celery --loglevel {level} --concurrency 2",
        "webhooks": f"-A leaderboard_project worker -Q webhooks -n webhooks@%h --loglevel {level} --concurrency 1",
    }


def run(port: int, demo: bool, parent: ParentWatch) -> int:
    append = append_service_on()
    names = ["run", "web", *(["append"] if append else []), "projector", *celery_workers(""), "beat"]
    names += ["demo"] if demo else []
    out = Output(names)
    for tool in ("uvicorn", "gunicorn", "granian", "celery"):
        if not (VENV_BIN / tool).exists():
            raise services.ServiceError(f"{VENV_BIN / tool} not found: start this with `make run`")
    if not services.port_free(port):
        raise services.ServiceError(f"port {port} on 127.0.0.1 is in use; choose another: PORT={port + 1} make run")

    state_file = Path(os.environ.get(STATE_FILE_ENV) or services.LOCAL_DIR / "run" / "processes.json")
    env = {
        **os.environ,
        **services.ensure_services(),
        "PORT": str(port),
        "PYTHONUNBUFFERED": "1",
        STATE_FILE_ENV: str(state_file),
        # group commit (scores/ingest/gather.py): the web processes hand single matches to the
        # append service on this socket, one per port (two `make run`s never share one)
        "WEB_APPEND_SERVICE": "1" if append else "0",
        "WEB_APPEND_SOCKET": os.environ.get("WEB_APPEND_SOCKET") or str(state_file.parent / f"append-{port}.sock"),
    }
    state_file.parent.mkdir(parents=True, exist_ok=True)  # beat keeps its schedule there too
    out.line("run", f"leaderboard service: http://127.0.0.1:{port}")
    out.line("run", f"DATABASE_URL={services.redact(env['DATABASE_URL'])}")
    out.line("run", f"REDIS_URL={services.redact(env['REDIS_URL'])}")
    out.line("run", "demo data and traffic: " + ("on (DEMO=0 skips them)" if demo else "off (DEMO=0)"))

    _step(out, background_env(env), "migrating the database", venv_cmd("python", "manage.py migrate --noinput"))
    if demo:
        _step(out, background_env(env), "loading the demo game", venv_cmd("python", "manage.py demo_load"))

    supervisor = Supervisor(env, out, parent, state_file)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, supervisor.on_signal)
    try:
        if append:
            # stores the single matches the web processes hand it, a gathered group per commit; the
            # web processes store their own while it is down (restarting), so it starts first but
            # nothing waits for it
            supervisor.start("append", venv_cmd("python", "-u manage.py append_service"))
        # nginx missing here? web.py installs it (root) or falls back, saying so, before the port opens
        supervisor.start("web", web_command(port))
        # applies what web stores to values and boards (scores/projection/); one owns every lane
        supervisor.start("projector", venv_cmd("python", "-u manage.py projector"))
        # The outbox job runs every 2 s: at INFO its "received/succeeded" lines would drown the output.
        level = os.environ.get("CELERY_LOG_LEVEL", "WARNING")
        for name, args in celery_workers(level).items():
            supervisor.start(name, venv_cmd("celery", args), background_env(env))
        schedule = str(state_file.parent / "celerybeat-schedule")
        supervisor.start(
            "beat",
            venv_cmd("celery", f"-A leaderboard_project beat --loglevel {level} --schedule", schedule),
            background_env(env),
        )

        def start_demo() -> None:
            # Only once web answers: the demo traffic talks to it.
            if demo:
                supervisor.start("demo", venv_cmd("python", "manage.py demo_traffic"))

        out.line("run", "Ctrl-C stops everything")
        return supervisor.supervise(port, start_demo)
    finally:
        supervisor.shutdown()


def main() -> int:
    try:
        port = int(os.environ.get("PORT") or "8000")
    except ValueError:
        services.log(f"error: PORT must be a number, not {os.environ['PORT']!r}")
        return 2
    demo = os.environ.get("DEMO", "1").strip() != "0"
    # DEPLOY_HTTPS=1 marks a public deployment, where the demo's 100,000 logins with the password
    # "demo" would be anyone's accounts: refuse before anything starts (demo_load refuses too;
    # docs/operations.md, "Production settings"). Read as leaderboard_project/settings.py reads it.
    if demo and os.environ.get("DEPLOY_HTTPS", "").strip().lower() in {"1", "true", "yes", "on"}:
        services.log(
            "error: DEPLOY_HTTPS=1: refusing to load the demo game, whose 100,000 players all sign in "
            "with the password 'demo'; run a deployment with DEMO=0"
        )
        return 2
    parent = ParentWatch()  # before any signal can reach make
    # Until supervision starts, a stop signal unwinds like Ctrl-C (servers are stopped below).
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGHUP, _raise_stop)
    try:
        return run(port, demo, parent)
    except services.ServiceError as exc:
        services.log(f"error: {exc}")
        return 1
    except (KeyboardInterrupt, Stop) as exc:
        services.log(f"{str(exc) or 'SIGINT'}: stopped before start-up finished")
        return 130
    finally:
        services.stop_started()


if __name__ == "__main__":
    sys.exit(main())
