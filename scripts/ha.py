#!/usr/bin/env python3
"""A project-local PostgreSQL with a synchronous standby and automatic failover: pg_auto_failover
(Debian's ``postgresql-<major>-auto-failover``) runs a monitor and two nodes, a primary and its
synchronous standby, on loopback ports, with everything under one directory (``.local/ha/`` by
default; the fault suite's under ``.local/faults/ha/``). Never the machine's shared server.

    python scripts/ha.py up       # start (or reuse) it; prints `export DATABASE_URL=...` (both hosts)
    python scripts/ha.py state    # the monitor's view: each node's reported and assigned state
    python scripts/ha.py down     # stop it (data kept until `make clean-local`)

The service reaches it with libpq's multi-host URL and ``target_session_attrs=read-write``:
whichever node is the primary takes the connections (docs/operations.md, "High availability").
The monitor's health checks are tightened for a loopback test (a node is declared dead after
about 2 s, the old primary given 4 s to demote itself): a failover takes ~6 s here instead of
pg_auto_failover's ~30 s defaults, which suit real networks better.

pg_autoctl is found on PATH or in /usr/lib/postgresql/*/bin; missing, it is installed with
apt-get as root, or the error says what to install. Standard library only, like services.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts import services as base  # noqa: E402

HA_DIR = base.LOCAL_DIR / "ha"
FIRST_PORT = int(os.environ.get("LEADERBOARD_LOCAL_HA_PORT", "25490"))
NODES = ("node1", "node2")
DBNAME = "leaderboard"
# The monitor's failure detection, tightened for loopback (pgautofailover.* settings, in ms).
FAST_MONITOR = {
    "health_check_period": 1000,
    "health_check_timeout": 1000,
    "health_check_max_retries": 1,
    "health_check_retry_delay": 500,
    "node_considered_unhealthy_timeout": 2000,
    # the standby waits this long before taking over, so that a primary only cut off from the
    # monitor has demoted itself first (network_partition_timeout below is shorter)
    "primary_demote_timeout": 4000,
}
NETWORK_PARTITION_TIMEOUT_S = 2


def pg_autoctl_binary() -> str | None:
    found = shutil.which("pg_autoctl")
    if found:
        return found
    candidates: list[Path] = [
        Path("/usr/bin/pg_autoctl"),
        *sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_autoctl")),
    ]
    for path in candidates:
        if os.access(path, os.X_OK):
            return str(path)
    return None


def ensure_pg_autoctl() -> str:
    """pg_autoctl, installed with apt-get (as root) for the installed PostgreSQL when missing."""
    found = pg_autoctl_binary()
    if found:
        return found
    bindir = base.postgres_bin_dir()
    major = base._pg_major(bindir) if bindir else None
    package = f"postgresql-{major or '15'}-auto-failover"
    if not (base._is_root() and shutil.which("apt-get")):
        raise base.ServiceError(
            f"pg_auto_failover is not installed; install it with\n    sudo apt-get install {package}"
        )
    base.log(f"installing {package} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", package]):
        if subprocess.run(cmd, env=env, stdout=base.progress_sink()).returncode != 0:
            raise base.ServiceError(f"`{' '.join(cmd)}` failed; install by hand: sudo apt-get install {package}")
    found = pg_autoctl_binary()
    if found is None:
        raise base.ServiceError(f"{package} installed, but no pg_autoctl found")
    return found


class HACluster:
    """A monitor and two keepers (each a pg_autoctl process supervising its postgres), all under
    `root`, each keeper in a process group of its own so a test can kill one node whole."""

    def __init__(self, root: Path = HA_DIR, first_port: int = FIRST_PORT) -> None:
        self.link = root
        self.root = root.resolve() if root.exists() else root
        self.first_port = first_port
        self.user = base._service_user()
        self.autoctl = pg_autoctl_binary() or "pg_autoctl"  # installed by create() when missing
        self.bindir = base.postgres_bin_dir() or Path("/usr/lib/postgresql/15/bin")
        self.ports: dict[str, int] = {}
        with contextlib.suppress(OSError, ValueError):
            self.ports = json.loads((self.root / "ports.json").read_text())

    # --- plumbing ---------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        # pg_autoctl keeps each node's configuration and state under XDG directories: ours
        return {
            **os.environ,
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.root / "share"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "PATH": f"{self.bindir}:{os.environ.get('PATH', '')}",
            "PG_CONFIG": str(self.bindir / "pg_config"),
        }

    def _pgdata(self, name: str) -> Path:
        return self.root / name

    def _ctl(self, *args: str, timeout: float = 120) -> str:
        cmd = base._as_user([self.autoctl, *args], self.user)
        proc = subprocess.run(cmd, env=self._env(), cwd=self.root, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise base.ServiceError(f"pg_autoctl {' '.join(args[:2])} failed (exit {proc.returncode}):\n{tail}")
        return proc.stdout

    def _pidfile(self, name: str) -> Path:
        return self.root / f"{name}.keeper.pid"

    def keeper_pid(self, name: str) -> int | None:
        pid = base._read_pid(self._pidfile(name))
        return pid if pid is not None and base._pid_alive(pid, "pg_autoctl") else None

    @property
    def monitor_uri(self) -> str:
        return f"postgres://autoctl_node@127.0.0.1:{self.ports['monitor']}/pg_auto_failover?sslmode=disable"

    def url(self, dbname: str = DBNAME) -> str:
        hosts = ",".join(f"127.0.0.1:{self.ports[n]}" for n in NODES)
        return f"postgres://{base.PG_SUPERUSER}@{hosts}/{dbname}?target_session_attrs=read-write"

    def node_url(self, name: str, dbname: str = DBNAME) -> str:
        return f"postgres://{base.PG_SUPERUSER}@127.0.0.1:{self.ports[name]}/{dbname}"

    # --- life -------------------------------------------------------------------------------

    def running(self) -> bool:
        return bool(self.ports) and all(self.keeper_pid(n) for n in ("monitor", *NODES)) and self.primary() is not None

    def create(self) -> None:
        """A fresh cluster: the monitor, then the first node (the primary), then the second
        (a base backup of the first, then its synchronous standby)."""
        self.autoctl = ensure_pg_autoctl()
        if base.postgres_bin_dir() is None:
            raise base.ServiceError("PostgreSQL server binaries not found: sudo apt-get install postgresql")
        self.stop()
        if self.link.is_symlink():
            shutil.rmtree(self.link.resolve(), ignore_errors=True)
            self.link.unlink()
        shutil.rmtree(self.link, ignore_errors=True)
        self.root = base.service_dir(self.link, self.user, name=f"ha-{self.link.parent.name}", fresh=True)
        for sub in ("config", "share", "run"):
            (self.root / sub).mkdir(mode=0o700)
            if self.user:
                base._chown(self.root / sub, self.user)
        port, self.ports = self.first_port, {}
        for name in ("monitor", *NODES):
            port = base._free_port(port)
            self.ports[name] = port
            port += 1
        (self.root / "ports.json").write_text(json.dumps(self.ports))
        base.log(f"ha: pg_auto_failover monitor and nodes on 127.0.0.1 ports {self.ports} under {self.root}")
        common = ("--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl")
        self._ctl("create", "monitor", "--pgdata", str(self._pgdata("monitor")), "--pgport", str(self.ports["monitor"]), *common)  # fmt: skip
        self.start_keeper("monitor")
        self._wait("the monitor", lambda: base.probe_postgres("127.0.0.1", self.ports["monitor"], database="pg_auto_failover") == "ok")  # fmt: skip
        self._tune_monitor()
        for name in NODES:
            self._ctl(
                "create", "postgres", "--pgdata", str(self._pgdata(name)), "--pgport", str(self.ports[name]),
                "--name", name, "--dbname", DBNAME, "--monitor", self.monitor_uri, *common,
            )  # fmt: skip
            self._ctl("config", "set", "--pgdata", str(self._pgdata(name)),
                      "timeout.network_partition_timeout", str(NETWORK_PARTITION_TIMEOUT_S))  # fmt: skip
            self.start_keeper(name)
            if name == NODES[0]:  # alone, it is "single" until a standby joins
                self._wait(f"{name} to run", lambda: self.states().get(NODES[0]) == ("single", "single"), timeout=120)
        self.wait_healthy(timeout=180)

    def _tune_monitor(self) -> None:
        statements = [f"ALTER SYSTEM SET pgautofailover.{k} = {v}" for k, v in FAST_MONITOR.items()]
        uri = f"postgres://{base.PG_SUPERUSER}@127.0.0.1:{self.ports['monitor']}/pg_auto_failover"
        args = [a for sql in (*statements, "SELECT pg_reload_conf()") for a in ("-c", sql)]
        base._run([str(self.bindir / "psql"), "-X", "-q", "-d", uri, *args], "tuning the monitor")

    def start_keeper(self, name: str) -> None:
        """`pg_autoctl run` for one node (or the monitor), detached: it starts its postgres and
        follows the monitor's orders. A node killed earlier rejoins (pg_rewind) as a standby."""
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it
        proc = subprocess.Popen(
            base._as_user([self.autoctl, "run", "--pgdata", str(self._pgdata(name))], self.user),
            env=self._env(), cwd=self.root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self._pidfile(name).write_text(f"{proc.pid}\n")

    def kill(self, name: str) -> None:
        """kill -9 a whole node, as when its machine dies: the keeper, postgres and its backends."""
        pid = base._read_pid(self._pidfile(name))
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        self._wait(f"{name} to die", lambda: base.probe_postgres("127.0.0.1", self.ports[name]) == "down", timeout=10)

    def stop(self) -> None:
        """Every keeper stopped (each stops its postgres), the nodes before the monitor."""
        for name in (*NODES, "monitor"):
            pid = base._read_pid(self._pidfile(name)) if self.ports else None
            if pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and _group_alive(pid):
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            self._pidfile(name).unlink(missing_ok=True)

    # --- what the monitor says --------------------------------------------------------------

    def states(self) -> dict[str, tuple[str, str]]:
        """Node name -> (reported state, assigned state), as the monitor has them."""
        try:
            out = self._ctl("show", "state", "--pgdata", str(self._pgdata("monitor")), "--json", timeout=10)
            return {n["nodename"]: (n["current_group_state"], n["assigned_group_state"]) for n in json.loads(out)}
        except (base.ServiceError, ValueError, KeyError, subprocess.TimeoutExpired):
            return {}

    def primary(self) -> str | None:
        """The node that is primary with its synchronous standby in place, else None."""
        states = self.states()
        primaries = [n for n, (now, goal) in states.items() if now == goal == "primary"]
        standbys = [n for n, (now, goal) in states.items() if now == goal == "secondary"]
        return primaries[0] if len(primaries) == 1 and standbys else None

    def wait_healthy(self, timeout: float = 60) -> str:
        """Wait for a primary and a synchronous standby; return the primary's name."""
        self._wait("a primary and its standby", lambda: self.primary() is not None, timeout=timeout)
        primary = self.primary()
        assert primary is not None
        return primary

    def _wait(self, what: str, ready: object, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ready():  # type: ignore[operator]
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {n}.log:\n{base._tail(self.root / f'{n}.log', 8)}" for n in ("monitor", *NODES))
                raise base.ServiceError(f"ha: {what} not there after {timeout:.0f} s\n{logs}")
            time.sleep(0.2)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ensure_ha(root: Path = HA_DIR) -> HACluster:
    """The cluster under `root`, reused when it runs, else created anew."""
    cluster = HACluster(root)
    if cluster.running():
        base.log(f"ha: reusing the project-local cluster on ports {cluster.ports}")
        return cluster
    cluster.create()
    return cluster


def main(argv: list[str] | None = None) -> int:
    command = (argv if argv is not None else sys.argv[1:])[:1] or ["up"]
    try:
        if command[0] == "up":
            print(f"export DATABASE_URL={ensure_ha().url()}")
        elif command[0] == "state":
            for name, (now, goal) in HACluster().states().items():
                print(f"{name}: {now} (assigned {goal})")
        elif command[0] == "down":
            HACluster().stop()
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except base.ServiceError as exc:
        base.log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())


class StreamingPair:
    """A primary and a plain streaming replica of it (initdb, then pg_basebackup -R), no failover:
    what the read-replica tests and benchmarks read from. Under `root`, on free ports."""

    def __init__(self, root: Path, first_port: int = FIRST_PORT + 10) -> None:
        self.user = base._service_user()
        bindir = base.postgres_bin_dir()
        if bindir is None:
            raise base.ServiceError("PostgreSQL server binaries not found: sudo apt-get install postgresql")
        self.bindir = bindir
        self.link = root
        self.root = root
        self.ports = {"primary": base._free_port(first_port)}
        self.ports["replica"] = base._free_port(self.ports["primary"] + 1)

    def url(self, name: str, dbname: str = DBNAME) -> str:
        return f"postgres://{base.PG_SUPERUSER}@127.0.0.1:{self.ports[name]}/{dbname}"

    def _bin(self, tool: str, *args: str) -> None:
        base._run(base._as_user([str(self.bindir / tool), *args], self.user), tool, cwd="/")

    def create(self) -> None:
        self.destroy()
        shutil.rmtree(self.link, ignore_errors=True)
        self.root = base.service_dir(self.link, self.user, name=f"pair-{self.link.parent.name}", fresh=True)
        primary, replica = self.root / "primary", self.root / "replica"
        self._bin("initdb", "-D", str(primary), *base.INITDB_OPTIONS)
        with open(primary / "postgresql.conf", "a") as conf:
            conf.write("listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\nwal_level = replica\n")
        with open(primary / "pg_hba.conf", "a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")
        self.start("primary")
        self._bin("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.ports["primary"]), "-U", base.PG_SUPERUSER,
                  "-D", str(replica), "-R", "-X", "stream")  # fmt: skip
        self.start("replica")
        base._run([str(self.bindir / "psql"), "-X", "-q", "-d", self.url("primary", "postgres"),
                   "-c", f"CREATE DATABASE {DBNAME}"], "createdb")  # fmt: skip

    def start(self, name: str) -> None:
        data = self.root / name
        self._bin("pg_ctl", "-D", str(data), "-l", str(data / "log"), "-o", f"-p {self.ports[name]}", "-w", "start")

    def stop(self, name: str) -> None:
        data = self.root / name
        if (data / "postmaster.pid").exists():
            self._bin("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")

    def destroy(self) -> None:
        for name in ("replica", "primary"):
            with contextlib.suppress(base.ServiceError, OSError):
                self.stop(name)
