#!/usr/bin/env python3
"""Find or start the PostgreSQL and Redis that `make run`, `make test` and `make manage` use.

Each service is resolved on its own, first match wins:

  a. ``DATABASE_URL`` / ``REDIS_URL`` from the environment, used as given;
  b. the machine's defaults, if they really answer: PostgreSQL on 127.0.0.1:5432 accepting
     user ``postgres`` without a password, Redis on 127.0.0.1:6379 answering PING
     (skipped when ``LEADERBOARD_IGNORE_LOCAL_SERVICES=1``);
  c. project-local servers started from the installed binaries, data under ``.local/``,
     bound to 127.0.0.1 on ports 25432 / 26379 (or the next free ones); a server left running
     by an earlier invocation is reused;
  d. as root with apt-get: ``apt-get install postgresql redis-server``, then (c);
  e. otherwise: exit non-zero naming the packages to install.

The database named in DATABASE_URL is created when missing.

Standard library only, so it runs before the virtualenv exists (``clean``, ``stop``) and can be
imported by tests (``from scripts.services import redis_server_binary``).

Over 400 lines on purpose: one file, because it must run with no virtualenv and no package on
the path (``python scripts/services.py``); Postgres, Redis, the test slots and the secrets each
have their own section. The project-local Redis Cluster is in ``scripts/cluster.py``.

Command line::

    python scripts/services.py exec [--for-tests] -- CMD [ARG...]   # run CMD with the env set
    python scripts/services.py env [--for-tests]     # print `export` lines; servers keep running
    python scripts/services.py stop                  # stop the project-local servers
    python scripts/services.py clean                 # stop them and delete .local/
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import hashlib
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from urllib.parse import unquote, urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parent.parent
LOCAL_DIR = REPO_ROOT / ".local"

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/leaderboard"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# Every port the project's own servers listen on lies below the kernel's ephemeral range
# (Linux: 32768-60999). A client connecting to a port inside that range while nothing listens
# there (a server starting, stopped or killed by a fault test) can be handed that very port as
# its source and connect to itself: it reads its own request back as the answer ("BadStatusLine:
# GET /healthz HTTP/1.1") and holds the port, so the server cannot bind it again.
LOCAL_PG_PORT = int(os.environ.get("LEADERBOARD_LOCAL_PG_PORT", "25432"))
LOCAL_REDIS_PORT = int(os.environ.get("LEADERBOARD_LOCAL_REDIS_PORT", "26379"))
SPARE_PORTS = range(20000, 32000)  # where spare_port() looks
# Tests flush their Redis database: keep them off db 0, where a developer's own data lives.
TEST_REDIS_DB = 15
# Test runs of several checkouts on one machine each take a slot (a lock file held while the
# run lasts): slot N > 0 gets its own test database (test_<name>_sN), since a run creates,
# flushes and drops it. Slot 0 keeps the plain name. Each run is split over up to TEST_WORKERS
# pytest-xdist workers, each with a Redis db of its own (pytest-django suffixes the database
# name per worker): slot N's workers use dbs 15 - N, 15 - N - TEST_SLOTS, ... (TEST_REDIS_DBS),
# so 5 slots of 3 workers fit in dbs 1-15 and no test ever flushes db 0.
TEST_SLOTS = 5
TEST_WORKERS = 3
# initdb and postgres refuse to run as root. As root, the project-local cluster runs as the
# `postgres` system user when there is one, else as `leaderboard-pg` (created on demand).
PG_SERVICE_USERS = ("postgres", "leaderboard-pg")
PG_SUPERUSER = "postgres"
# Trust auth is fine for the project-local cluster: it listens on 127.0.0.1 only and holds
# development data. The C locale keeps initdb from depending on which locales are generated.
INITDB_OPTIONS = ("-U", PG_SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-locale")
APT_HINT = "sudo apt-get install {packages}  (or your distribution's equivalent)"


class ServiceError(Exception):
    """A service could not be found or started; the message says what to do."""


def log(message: str) -> None:
    # stderr, so that `services.py env` keeps stdout for the variables alone.
    print(f"services: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- URLs


def redact(url: str) -> str:
    """The URL with its password, if any, replaced by ``***`` (safe to print)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    hostpart = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{hostpart}"))


def with_redis_db(url: str, db: int) -> str:
    """The same Redis server, database *db*."""
    parts = urlsplit(url)
    if parts.scheme == "unix":  # unix:///path/redis.sock?db=N
        query = "&".join(p for p in parts.query.split("&") if p and not p.startswith("db="))
        # by hand: urlunsplit would drop the empty authority ("unix:/path")
        return f"unix://{parts.path}?" + (f"{query}&db={db}" if query else f"db={db}")
    return urlunsplit(parts._replace(path=f"/{db}"))


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    username: str | None
    password: str | None


def _endpoint(url: str, default_port: int) -> Endpoint | None:
    """Host and port of a TCP URL, or None (unix socket, unparsable) where we cannot probe."""
    try:
        parts = urlsplit(url)
        port = parts.port or default_port
    except ValueError:
        return None
    if not parts.hostname or parts.scheme in ("unix", "rediss"):
        return None
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return Endpoint(parts.hostname, port, username, password)


# --------------------------------------------------------------------------- probes


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed by the server")
        data += chunk
    return data


def probe_postgres(
    host: str, port: int, user: str = PG_SUPERUSER, database: str = "postgres", timeout: float = 3.0
) -> str:
    """Start a PostgreSQL session over the wire protocol and report how far it got.

    Returns ``"ok"`` when the server let *user* in without a password, ``"password"`` when it
    asks for one, ``"down"`` when nothing accepts the connection, else the server's error text.
    pg_isready would only say that a server listens, not that trust auth lets us in.
    """
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return "down"
    with sock:
        try:
            params = f"user\0{user}\0database\0{database}\0\0".encode()
            body = struct.pack("!I", 196608) + params  # protocol 3.0
            sock.sendall(struct.pack("!I", len(body) + 4) + body)
            while True:
                kind = _recv_exact(sock, 1)
                (length,) = struct.unpack("!I", _recv_exact(sock, 4))
                payload = _recv_exact(sock, length - 4)
                if kind == b"R":  # Authentication*: 0 is AuthenticationOk
                    if struct.unpack("!I", payload[:4])[0] != 0:
                        return "password"
                elif kind == b"E":
                    fields = dict((f[:1], f[1:]) for f in payload.split(b"\0") if f)
                    return fields.get(b"M", b"error").decode(errors="replace")
                elif kind == b"Z":  # ReadyForQuery: the session is fully up
                    sock.sendall(b"X" + struct.pack("!I", 4))  # Terminate
                    return "ok"
                # Anything else (ParameterStatus, BackendKeyData, notices) is skipped.
        except (OSError, ConnectionError, struct.error) as exc:
            return f"no PostgreSQL answer ({exc})"


def _resp(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        raw = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def probe_redis(
    host: str, port: int, username: str | None = None, password: str | None = None, timeout: float = 2.0
) -> str:
    """Send (AUTH and) PING. Returns ``"ok"`` on +PONG, ``"password"``, ``"down"`` or the error."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return "down"
    with sock, sock.makefile("rb") as reader:
        try:
            if password:
                sock.sendall(_resp("AUTH", username, password) if username else _resp("AUTH", password))
                reply = reader.readline().strip()
                if not reply.startswith(b"+"):
                    return reply.decode(errors="replace") or "no Redis answer"
            sock.sendall(_resp("PING"))
            reply = reader.readline().strip()
        except OSError as exc:
            return f"no Redis answer ({exc})"
    if reply == b"+PONG":
        return "ok"
    if reply.startswith(b"-NOAUTH"):
        return "password"
    return reply.decode(errors="replace") or "no Redis answer"


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers will
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ephemeral_ports() -> range:
    """The ports the kernel hands outgoing connections as their source."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def spare_port() -> int:
    """A free loopback port for a server about to start, outside the ephemeral range (see
    LOCAL_PG_PORT); a random start so that runs side by side rarely reach for the same one."""
    ephemeral = ephemeral_ports()
    start = int.from_bytes(os.urandom(2), "big")
    for i in range(len(SPARE_PORTS)):
        port = SPARE_PORTS[(start + i) % len(SPARE_PORTS)]
        if port not in ephemeral and port_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # a kernel with no range outside
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _free_port(preferred: int) -> int:
    for port in range(preferred, preferred + 100):
        if port_free(port):
            if port != preferred:
                log(f"port {preferred} is taken; using {port}")
            return port
    raise ServiceError(f"no free port in {preferred}-{preferred + 99} on 127.0.0.1")


def _pid_alive(pid: int, name: str) -> bool:
    """True if *pid* runs and (where /proc tells) is a *name* process, not a recycled pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    with contextlib.suppress(OSError):
        return name in Path(f"/proc/{pid}/comm").read_text()
    return True


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------- binaries


def _pg_major(bindir: Path) -> str | None:
    try:
        out = subprocess.run([str(bindir / "pg_ctl"), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    match = re.search(r"(\d+)(?:\.\d+)?", out)
    return match.group(1) if match else None


def postgres_bin_dir(want_major: str | None = None) -> Path | None:
    """Directory holding initdb, pg_ctl and postgres (PATH first, then Debian's versioned dirs).

    With *want_major*, prefer the binaries of that major version (an existing data directory
    only starts with them).
    """
    candidates: list[Path] = []
    for tool in ("pg_ctl", "initdb"):
        found = shutil.which(tool)
        if found:
            candidates.append(Path(found).resolve().parent)
    debian_dirs = glob.glob("/usr/lib/postgresql/*/bin")
    debian_dirs.sort(key=lambda d: int(re.sub(r"\D", "", Path(d).parent.name) or 0), reverse=True)
    candidates += [Path(d) for d in debian_dirs]
    usable = [
        d for d in dict.fromkeys(candidates) if all(os.access(d / t, os.X_OK) for t in ("initdb", "pg_ctl", "postgres"))
    ]
    if want_major:
        for bindir in usable:
            if _pg_major(bindir) == want_major:
                return bindir
    return usable[0] if usable else None


def redis_server_binary() -> str | None:
    """Path of an installed redis-server, or None."""
    found = shutil.which("redis-server")
    if found:
        return found
    for path in ("/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"):
        if os.access(path, os.X_OK):
            return path
    return None


# --------------------------------------------------------------------------- subprocess helpers


def _run(cmd: list[str], what: str, **kwargs: object) -> str:
    """Run *cmd*, return its output; on failure raise ServiceError with the output's tail."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    except OSError as exc:
        raise ServiceError(f"{what}: cannot run {cmd[0]}: {exc}") from exc
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-15:])
        raise ServiceError(f"{what} failed (exit {proc.returncode}): {shlex.join(cmd)}\n{tail}")
    return output


def _tail(path: Path, lines: int = 15) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def _is_root() -> bool:
    return os.geteuid() == 0


def _service_user() -> str | None:
    """The unprivileged user that runs the project-local PostgreSQL when we are root."""
    if not _is_root():
        return None
    for name in PG_SERVICE_USERS:
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    name = PG_SERVICE_USERS[-1]
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    log(f"creating system user {name!r} to run PostgreSQL (it refuses to run as root)")
    _run(
        [useradd, "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name],
        "useradd",
    )
    return name


def _as_user(cmd: list[str], user: str | None) -> list[str]:
    if user is None:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *cmd]
    return ["su", "-s", "/bin/sh", user, "-c", shlex.join(cmd)]


def _chown(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


# --------------------------------------------------------------------------- project-local servers


@dataclass
class LocalServer:
    """A project-local server this process started (and so must stop)."""

    name: str
    stop: Callable[[], None]


_started: list[LocalServer] = []


@contextlib.contextmanager
def _local_lock() -> Iterator[None]:
    """Serialise concurrent invocations (say `make run` and `make test`) around .local/."""
    LOCAL_DIR.mkdir(parents=True, exist_ok=True)
    with open(LOCAL_DIR / "services.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _pg_root(user: str | None, create: bool) -> Path | None:
    """Directory holding the cluster (data/ and its log): ``.local/postgres`` or its target."""
    link = LOCAL_DIR / "postgres"
    if link.exists():
        return link.resolve()
    if not create:
        return None
    if link.is_symlink():  # its target was deleted: start over
        link.unlink()
    return service_dir(link, user, name="postgres")


def service_dir(link: Path, user: str | None, *, name: str, fresh: bool = False) -> Path:
    """A directory at `link` (mode 0700) that `user`, the user servers run as, can write. Where
    that user cannot reach `link` (a clone under /root or in a `mktemp -d`, both mode 0700), the
    directory is made under /var/tmp and `link` points to it, so whoever deletes .local/ finds
    it. `fresh`: an old /var/tmp directory of that name is emptied first."""
    link.mkdir(parents=True, mode=0o700)
    if user is None:
        return link
    _chown(link, user)
    if subprocess.run(_as_user(["test", "-w", str(link)], user), capture_output=True).returncode == 0:
        return link
    link.rmdir()
    digest = hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:12]
    target = Path("/var/tmp") / f"leaderboard-dev-{digest}-{name}"
    if fresh:
        shutil.rmtree(target, ignore_errors=True)
    target.mkdir(mode=0o700, exist_ok=True)
    _chown(target, user)
    link.symlink_to(target)
    log(f"{user!r} cannot reach {link.parent}; {name} lives in {target}")
    return target


def _data_major(data: Path) -> str | None:
    """Major version of the cluster in *data*, None if there is none yet."""
    with contextlib.suppress(OSError):
        return (data / "PG_VERSION").read_text().strip()
    return None


def _running_local_postgres(data: Path) -> int | None:
    """Port of the project-local postmaster if it runs and answers, else None."""
    # postmaster.pid: pid, data dir, start time, port, socket dir, listen address, ...
    with contextlib.suppress(OSError, ValueError, IndexError):
        lines = (data / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
        if _pid_alive(pid, "postgres") and probe_postgres("127.0.0.1", port) == "ok":
            return port
    return None


def _stop_local_postgres(bindir: Path | None, data: Path, user: str | None) -> None:
    if not (data / "postmaster.pid").exists():
        return
    pg_ctl = str(bindir / "pg_ctl") if bindir else shutil.which("pg_ctl")
    if pg_ctl is None:
        raise ServiceError(f"pg_ctl not found; cannot stop the PostgreSQL in {data}")
    log(f"stopping project-local PostgreSQL ({data})")
    _run(_as_user([pg_ctl, "-D", str(data), "-m", "fast", "-w", "-t", "60", "stop"], user), "pg_ctl stop", cwd="/")


def _local_pg_url(port: int) -> str:
    return f"postgres://{PG_SUPERUSER}@127.0.0.1:{port}/leaderboard"


def _local_postgres() -> str:
    user = _service_user()
    root = _pg_root(user, create=True)
    assert root is not None
    data = root / "data"
    want_major = _data_major(data)
    bindir = postgres_bin_dir(want_major)
    if bindir is None:
        raise ServiceError("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found")

    port = _running_local_postgres(data)
    if port is not None:
        log(f"postgres: reusing project-local PostgreSQL on 127.0.0.1:{port}")
        return _local_pg_url(port)

    if want_major is None:
        log(f"postgres: initialising a project-local cluster in {data}")
        initdb = [str(bindir / "initdb"), "-D", str(data), *INITDB_OPTIONS]
        _run(_as_user(initdb, user), "initdb", cwd=str(root))
        with open(data / "postgresql.conf", "a") as conf:
            # No unix socket: its default directory may not exist or be writable, and
            # everything here connects over TCP. The port is passed at each start.
            conf.write(
                "\n# project-local development cluster (scripts/services.py)\n"
                "listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\n"
            )
    elif _pg_major(bindir) != want_major:
        raise ServiceError(
            f"{data} was created by PostgreSQL {want_major}, which is not installed; "
            "`make clean-local` deletes it (and its data) so that a new one is created"
        )

    port = _free_port(LOCAL_PG_PORT)
    logfile = root / "postgres.log"
    log(f"postgres: starting project-local PostgreSQL on 127.0.0.1:{port} (log: {logfile})")
    cmd = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(logfile), "-o", f"-p {port}", "-w", "-t", "60", "start"]
    try:
        _run(_as_user(cmd, user), "pg_ctl start", cwd=str(root))
    except ServiceError as exc:
        raise ServiceError(f"{exc}\n--- {logfile}:\n{_tail(logfile)}") from None
    _started.append(LocalServer("postgres", lambda: _stop_local_postgres(bindir, data, user)))
    if (state := probe_postgres("127.0.0.1", port)) != "ok":
        raise ServiceError(f"project-local PostgreSQL started but does not let {PG_SUPERUSER} in: {state}")
    return _local_pg_url(port)


def _redis_paths() -> tuple[Path, Path, Path, Path]:
    rdir = LOCAL_DIR / "redis"
    return rdir, rdir / "redis.conf", rdir / "redis.pid", rdir / "redis.log"


def _running_local_redis() -> int | None:
    _, conf, pidfile, _ = _redis_paths()
    pid = _read_pid(pidfile)
    if pid is None or not _pid_alive(pid, "redis"):
        return None
    with contextlib.suppress(OSError, ValueError):
        match = re.search(r"^port (\d+)$", conf.read_text(), re.MULTILINE)
        if match and probe_redis("127.0.0.1", int(match.group(1))) == "ok":
            return int(match.group(1))
    return None


def _stop_local_redis() -> None:
    pidfile = _redis_paths()[2]
    pid = _read_pid(pidfile)
    if pid is None or not _pid_alive(pid, "redis"):
        return
    log(f"stopping project-local Redis (pid {pid})")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while _pid_alive(pid, "redis"):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.1)
    pidfile.unlink(missing_ok=True)


def _conf_quote(value: Path) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _local_redis() -> str:
    binary = redis_server_binary()
    if binary is None:
        raise ServiceError("redis-server not found")
    port = _running_local_redis()
    if port is not None:
        log(f"redis: reusing project-local Redis on 127.0.0.1:{port}")
        return f"redis://127.0.0.1:{port}/0"

    rdir, conf, pidfile, logfile = _redis_paths()
    rdir.mkdir(parents=True, exist_ok=True)
    port = _free_port(LOCAL_REDIS_PORT)
    conf.write_text(
        "# project-local development Redis (scripts/services.py); rewritten at each start\n"
        f"bind 127.0.0.1\nport {port}\nprotected-mode yes\n"
        'save ""\nappendonly no\n'  # nothing on disk: it is a cache and a broker here
        f"daemonize yes\npidfile {_conf_quote(pidfile)}\nlogfile {_conf_quote(logfile)}\ndir {_conf_quote(rdir)}\n"
    )
    pidfile.unlink(missing_ok=True)
    log(f"redis: starting project-local Redis on 127.0.0.1:{port} (log: {logfile})")
    _run([binary, str(conf)], "redis-server")
    deadline = time.monotonic() + 15
    while (state := probe_redis("127.0.0.1", port)) != "ok":
        if time.monotonic() > deadline:
            raise ServiceError(f"project-local Redis did not answer PING: {state}\n--- {logfile}:\n{_tail(logfile)}")
        time.sleep(0.1)
    _started.append(LocalServer("redis", _stop_local_redis))
    return f"redis://127.0.0.1:{port}/0"


# --------------------------------------------------------------------------- resolution


def _explicit(var: str, default_port: int, probe: Callable[[Endpoint], str]) -> str | None:
    """(a): the URL in *var*, checked to answer when it is a TCP address."""
    url = os.environ.get(var, "").strip()
    if not url:
        return None
    endpoint = _endpoint(url, default_port)
    if endpoint is not None and probe(endpoint) == "down":
        raise ServiceError(
            f"{var} is set ({redact(url)}) but nothing answers on {endpoint.host}:{endpoint.port}; "
            f"start that server, or unset {var} to let scripts/services.py find or start one"
        )
    log(f"{var}: using {redact(url)} from the environment")
    return url


def _default(name: str, url: str, state: str) -> str | None:
    """(b): the machine's default server, if *state* (its probe) says it lets us in."""
    if state == "ok":
        log(f"{name}: using the local server at {url}")
        return url
    reason = "not running" if state == "down" else f"not usable ({state})"
    log(f"{name}: {url} is {reason}")
    return None


def progress_sink() -> int:
    """The descriptor a child's progress output goes to: our stderr, keeping stdout for `env`.
    Under pytest's capsys `sys.stderr` has no descriptor, so fall back to fd 2 itself."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return 2


def _install_or_fail(packages: list[str]) -> None:
    """(d) or (e): install the missing server packages, or say exactly what to install."""
    command = APT_HINT.format(packages=" ".join(packages))
    if not (_is_root() and shutil.which("apt-get")):
        names = " and ".join({"postgresql": "PostgreSQL", "redis-server": "Redis"}[p] for p in packages)
        env_vars = " and ".join({"postgresql": "DATABASE_URL", "redis-server": "REDIS_URL"}[p] for p in packages)
        raise ServiceError(
            f"no usable {names} here, and no server binaries to start one; install them with\n"
            f"    {command}\nor set {env_vars} to a running server"
        )
    log(f"installing {' '.join(packages)} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", *packages]):
        if subprocess.run(cmd, env=env, stdout=progress_sink()).returncode != 0:
            raise ServiceError(f"`{shlex.join(cmd)}` failed; install by hand:\n    {command}")


def _ensure_database(url: str) -> None:
    """Create the database named in *url* if the server lacks it."""
    parts = urlsplit(url)
    name = unquote(parts.path.lstrip("/"))
    if not name or name == "postgres":
        return
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    try:
        import psycopg  # the virtualenv's; services.py itself stays importable without it
        from psycopg import sql
    except ImportError:
        _ensure_database_psql(url, maintenance, name)
        return
    try:
        psycopg.connect(url, connect_timeout=10).close()
        return  # it exists and we can reach it
    except psycopg.Error:
        pass  # missing, or not reachable this way: ask the maintenance database
    try:
        with psycopg.connect(maintenance, autocommit=True, connect_timeout=10) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                return
            log(f"creating database {name!r}")
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # a concurrent run won
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise ServiceError(f"cannot check or create database {name!r} on {redact(url)}: {exc}") from exc


def _ensure_database_psql(url: str, maintenance: str, name: str) -> None:
    psql = shutil.which("psql")
    if psql is None:
        log(f"warning: neither psycopg nor psql is available; not checking that database {name!r} exists")
        return
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    base = [psql, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"]
    if subprocess.run([*base, "-d", url, "-c", "SELECT 1"], env=env, capture_output=True).returncode == 0:
        return
    literal = "'" + name.replace("'", "''") + "'"
    exists = _run(
        [*base, "-d", maintenance, "-c", f"SELECT 1 FROM pg_database WHERE datname = {literal}"], "psql", env=env
    )
    if exists.strip():
        return
    log(f"creating database {name!r}")
    identifier = '"' + name.replace('"', '""') + '"'
    try:
        _run([*base, "-d", maintenance, "-c", f"CREATE DATABASE {identifier}"], "psql CREATE DATABASE", env=env)
    except ServiceError as exc:
        if "already exists" not in str(exc):  # a concurrent run won
            raise


def ensure_services(*, for_tests: bool = False) -> dict[str, str]:
    """Find or start PostgreSQL and Redis; return the env vars to set (DATABASE_URL, REDIS_URL,
    and unless *for_tests* this install's SECRET_KEY and SERVER_KEY_PEPPER: ensure_secrets()).

    With *for_tests*, REDIS_URL is ``TEST_REDIS_URL`` if set, else database 15 of the Redis found.
    Raises ServiceError with a message for the user when a service cannot be had.
    """
    use_defaults = os.environ.get("LEADERBOARD_IGNORE_LOCAL_SERVICES") != "1"
    test_redis_url = os.environ.get("TEST_REDIS_URL", "").strip() if for_tests else ""

    database_url = _explicit("DATABASE_URL", 5432, lambda e: probe_postgres(e.host, e.port, e.username or PG_SUPERUSER))
    if database_url is None and use_defaults:
        database_url = _default("postgres", DEFAULT_DATABASE_URL, probe_postgres("127.0.0.1", 5432))
    redis_url: str | None = test_redis_url or None
    if redis_url is None:
        redis_url = _explicit("REDIS_URL", 6379, lambda e: probe_redis(e.host, e.port, e.username, e.password))
    if redis_url is None and use_defaults:
        redis_url = _default("redis", DEFAULT_REDIS_URL, probe_redis("127.0.0.1", 6379))

    missing = []
    if database_url is None and postgres_bin_dir() is None:
        missing.append("postgresql")
    if redis_url is None and redis_server_binary() is None:
        missing.append("redis-server")
    if missing:
        _install_or_fail(missing)

    if database_url is None or redis_url is None:
        with _local_lock():
            if database_url is None and os.environ.get("LEADERBOARD_LOCAL_HA") == "1":
                database_url = _local_ha()  # a primary + synchronous standby + monitor (scripts/ha.py)
            if database_url is None:
                database_url = _local_postgres()
            if redis_url is None:
                redis_url = _local_redis()

    _ensure_database(database_url)
    found = {"DATABASE_URL": database_url, "REDIS_URL": redis_url}
    if for_tests:
        slot = _test_slot()
        if slot:
            name = urlsplit(database_url).path.lstrip("/") or "leaderboard"
            found["TEST_DATABASE_NAME"] = f"test_{name}_s{slot}"
            log(f"tests: another test run holds slot 0; this one uses slot {slot} ({found['TEST_DATABASE_NAME']})")
        if not test_redis_url:
            dbs = [TEST_REDIS_DB - slot - TEST_SLOTS * worker for worker in range(TEST_WORKERS)]
            found["REDIS_URL"] = with_redis_db(redis_url, dbs[0])
            found["TEST_REDIS_DBS"] = ",".join(map(str, dbs))  # one per xdist worker (settings_test.py)
            log(f"redis: tests use databases {found['TEST_REDIS_DBS']}: {redact(found['REDIS_URL'])}")
    if for_tests:  # the cluster topology of the board tests (scripts/cluster.py)
        found["TEST_REDIS_CLUSTER_URL"] = os.environ.get("TEST_REDIS_CLUSTER_URL", "").strip() or _cluster()
    # tests make throwaway secrets of their own (leaderboard_project/settings_test.py)
    return found if for_tests else {**found, **ensure_secrets()}


_slot: int | None = None  # this process's test slot; its lock file stays open until we exit


def _test_slot() -> int:
    """Take the first free test slot for as long as this process lives (the test command runs
    as our child and inherits no descriptors: the lock is ours, released when we exit)."""
    global _slot
    if _slot is not None:
        return _slot
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"leaderboard-test-slots-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    for slot in range(TEST_SLOTS):
        fd = os.open(folder / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _slot = slot
        return slot
    raise ServiceError(f"{TEST_SLOTS} test runs are going on at once on this machine; wait for one to end")


# --------------------------------------------------------------------------- secrets

SECRETS_FILE = LOCAL_DIR / "secrets.env"
SECRET_NAMES = ("SECRET_KEY", "SERVER_KEY_PEPPER")


def _read_secrets(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text().splitlines():
            name, sep, value = line.partition("=")
            if sep and name.strip() in SECRET_NAMES and value.strip():
                values[name.strip()] = value.strip()
    return values


def ensure_secrets() -> dict[str, str]:
    """SECRET_KEY and SERVER_KEY_PEPPER for `make run` / `make manage`: the environment's, else
    this install's, kept in .local/secrets.env (git-ignored, mode 0600): two distinct random
    values written on first use, so every install has its own and a restart keeps them (server
    keys are derived from the pepper; sessions and player tokens are signed with the key)."""
    wanted = {name: os.environ.get(name, "").strip() for name in SECRET_NAMES}
    if all(wanted.values()):
        return wanted
    import secrets

    with _local_lock():
        stored = _read_secrets(SECRETS_FILE)
        missing = [name for name in SECRET_NAMES if name not in stored]
        if missing:
            stored.update({name: secrets.token_urlsafe(48) for name in missing})
            tmp = SECRETS_FILE.with_suffix(".tmp")
            tmp.unlink(missing_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write("# this install's secrets, written by scripts/services.py; keep private, never commit\n")
                handle.writelines(f"{name}={stored[name]}\n" for name in SECRET_NAMES)
            os.replace(tmp, SECRETS_FILE)
            log(f"wrote new random {' and '.join(missing)} to {SECRETS_FILE} (mode 0600)")
        elif SECRETS_FILE.stat().st_mode & 0o077:
            SECRETS_FILE.chmod(0o600)
            log(f"{SECRETS_FILE} was readable by others: now 0600")
    return {name: wanted[name] or stored[name] for name in SECRET_NAMES}


def _local_ha() -> str:
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from scripts import ha

    return ha.ensure_ha().url()


def _cluster() -> str:
    if str(REPO_ROOT) not in sys.path:  # run as a script: scripts/ is not a package on the path yet
        sys.path.insert(0, str(REPO_ROOT))
    from scripts import cluster

    with _local_lock():
        return cluster.ensure_cluster()


def stop_started() -> None:
    """Stop the project-local servers that this process started (not reused ones)."""
    while _started:
        server = _started.pop()
        try:
            server.stop()
        except (ServiceError, OSError) as exc:
            log(f"could not stop {server.name}: {exc}")


def stop_local() -> None:
    """Stop every project-local server, whoever started it."""
    with _local_lock():
        root = _pg_root(None, create=False)
        if root is not None:
            data = root / "data"
            _stop_local_postgres(postgres_bin_dir(_data_major(data)), data, _service_user())
        _stop_local_redis()
        if str(REPO_ROOT) not in sys.path:
            sys.path.insert(0, str(REPO_ROOT))
        from scripts import cluster, ha

        cluster.stop_cluster()
        if ha.HA_DIR.exists():
            ha.HACluster(ha.HA_DIR).stop()
    _started.clear()


def clean_local() -> None:
    """Stop the project-local servers and delete .local/ (and the clusters, wherever they are)."""
    stop_local()
    for link in (LOCAL_DIR / "postgres", LOCAL_DIR / "faults" / "pg", LOCAL_DIR / "ha", LOCAL_DIR / "faults" / "ha"):
        if link.is_symlink():
            shutil.rmtree(link.resolve(), ignore_errors=True)
    shutil.rmtree(LOCAL_DIR, ignore_errors=True)
    log(f"deleted {LOCAL_DIR}")


# --------------------------------------------------------------------------- command line


def _exec(cmd: list[str], for_tests: bool) -> int:
    try:
        env = {**os.environ, **ensure_services(for_tests=for_tests)}
    except (ServiceError, KeyboardInterrupt) as exc:
        log(f"error: {exc}" if isinstance(exc, ServiceError) else "interrupted")
        stop_started()
        return 1 if isinstance(exc, ServiceError) else 130
    try:
        try:
            child = subprocess.Popen(cmd, env=env)
        except OSError as exc:
            log(f"error: cannot run {cmd[0]}: {exc}")
            return 127

        # Ctrl-C reaches the child too (same process group): let it finish its own cleanup
        # and stop the servers after it. SIGTERM/SIGHUP sent to us alone are passed on.
        def forward(signum: int, _frame: FrameType | None) -> None:
            if signum != signal.SIGINT:
                child.send_signal(signum)

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, forward)
        returncode = child.wait()
        return returncode if returncode >= 0 else 128 - returncode
    finally:
        stop_started()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("exec", "run CMD with DATABASE_URL and REDIS_URL set"), ("env", "print export lines")):
        command = sub.add_parser(name, help=text)
        command.add_argument(
            "--for-tests", action="store_true", help="REDIS_URL: TEST_REDIS_URL or db 15 of the Redis found"
        )
        if name == "exec":
            command.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARG...]")
    sub.add_parser("stop", help="stop the project-local servers")
    sub.add_parser("clean", help="stop the project-local servers and delete .local/")
    args = parser.parse_args(argv)

    if args.command == "exec":
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not cmd:
            parser.error("exec needs a command: exec -- CMD [ARG...]")
        return _exec(cmd, args.for_tests)
    try:
        if args.command == "env":
            for key, value in ensure_services(for_tests=args.for_tests).items():
                if key not in SECRET_NAMES:  # kept in their file, not printed where logs may keep them
                    print(f"export {key}={shlex.quote(value)}")
        elif args.command == "stop":
            stop_local()
        else:
            clean_local()
    except ServiceError as exc:
        log(f"error: {exc}")
        stop_started()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
