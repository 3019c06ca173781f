"""`make faults`: the service under signed load while its dependencies fail, one fault at a time.

    python -m bench.faults [--seconds 20] [--only redis-killed,postgres-stopped] [--rate 8]

Everything it breaks is its own, under .local/faults/ (never the machine's shared servers): a
PostgreSQL cluster and a redis-server on free ports, and against them the serving setup `make
run` starts with the projector and a Celery worker and beat. Per fault: --seconds of signed
single-match submissions (--rate a second, each a new match of a new player) and a /top read
loop; the fault begins at 25 % of the run and is healed at 60 %. Then every acknowledged result
must be in Postgres and on the board in Redis. primary-killed runs on a pg_auto_failover primary
with its synchronous standby (scripts/ha.py); run-redis-killed under `make run`'s own supervisor
(scripts/run.py). Exit status 1 on a loss (under `make run`: also not healed, or a process
down). docs/reliability.md says how to read the table.

A new fault is a Fault(name, inject, heal) in FAULTS.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis

from bench import environment, ingest
from bench.environment import REPO_ROOT, VENV_BIN, BenchEnv, ServerKey
from bench.loadgen import signed_headers
from bench.report import percentile
from bench.server import ProcessGroup, ServerProcess, background_commands, http_request
from scripts import services
from scripts.ha import FIRST_PORT as HA_FIRST_PORT
from scripts.ha import HACluster
from scripts.services import INITDB_OPTIONS, _as_user, _free_port, _service_user

FAULTS_DIR = services.LOCAL_DIR / "faults"
GAME = environment.GAME_SLUG
STATE_FILE = FAULTS_DIR / "run" / "processes.json"  # the supervisor's, on the stack `make run` starts
SERVICE_ENV = {  # on top of BenchEnv.process_env()
    "ANTICHEAT_ASYNC_CHECKS": "0",
    # settings.py's default, which the test suite's environment raises (settings_test.py)
    "REDIS_SOCKET_TIMEOUT": "0.2",
}
SETTLE_SECONDS = 30.0  # how long acknowledged results may take to reach the board after a heal
RECOVERY_LIMIT_SECONDS = 30.0  # past the window, the load waits this long at most for the service to heal
SETTLED_SECONDS = 1.0  # healed: writes and reads answered, all healthy, for this long
# the ports tried first, below the ephemeral range (scripts/services.py, LOCAL_PG_PORT)
PG_PORT, REDIS_PORT, WEB_PORT, HA_WEB_PORT = 27432, 28379, 28080, 28280


def log(message: str) -> None:
    print(f"faults: {message}", file=sys.stderr, flush=True)


def _preferred_port(var: str, default: int) -> int:
    """The port to try first (the next free one is taken if it is busy): several checkouts on one
    machine keep their fault suites apart with FAULTS_PG_PORT, FAULTS_REDIS_PORT, FAULTS_WEB_PORT."""
    return int(os.environ.get(var) or default)


def _wait(what: str, ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout:.0f} s")
        time.sleep(0.1)


# --- the servers this suite owns ------------------------------------------------------------


class LocalPostgres:
    """One PostgreSQL server; the HA stack has a scripts.ha.HACluster in its place (the same
    create(), url() and stop())."""

    def __init__(self, root: Path) -> None:
        self.user = _service_user()
        self.bindir = services.postgres_bin_dir()
        if self.bindir is None:
            raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
        self.data = root / "pg"
        self.port = _free_port(_preferred_port("FAULTS_PG_PORT", PG_PORT))

    def url(self, dbname: str = "leaderboard") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def _ctl(self, *args: str) -> None:
        cmd = [str(self.bindir / "pg_ctl"), "-D", str(self.data), *args]
        subprocess.run(_as_user(cmd, self.user), check=True, capture_output=True, cwd="/")

    def create(self) -> None:
        # where the postgres user cannot reach .local/faults/pg, a link to a directory it can
        self.data = services.service_dir(self.data, self.user, name="faults-postgres", fresh=True)
        initdb = [str(self.bindir / "initdb"), "-D", str(self.data), *INITDB_OPTIONS]
        subprocess.run(_as_user(initdb, self.user), check=True, capture_output=True, cwd="/")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write("listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = on\n")
        self.start()
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE leaderboard")

    def start(self) -> None:
        self._ctl("-l", str(self.data / "log"), "-o", f"-p {self.port}", "-w", "-t", "60", "start")
        _wait("postgres", lambda: services.probe_postgres("127.0.0.1", self.port) == "ok")

    def stop(self) -> None:
        self._ctl("-m", "fast", "-w", "-t", "60", "stop")


class LocalRedis:
    def __init__(self, root: Path) -> None:
        binary = services.redis_server_binary()
        if binary is None:
            raise RuntimeError("redis-server not found (apt-get install redis-server)")
        self.binary, self.dir = binary, root / "redis"
        self.port = _free_port(_preferred_port("FAULTS_REDIS_PORT", REDIS_PORT))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen([self.binary, *args, "--dir", str(self.dir)], stdout=subprocess.DEVNULL)
        _wait("redis", lambda: services.probe_redis("127.0.0.1", self.port) == "ok")

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)
        if signum == signal.SIGKILL:
            self.proc.wait()

    def destroy(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


@dataclass
class Stack:
    """Postgres, Redis and the service's processes, all this suite's own."""

    pg: LocalPostgres | HACluster
    redis: LocalRedis
    port: int
    procs: dict[str, ProcessGroup] = field(default_factory=dict)
    web: ServerProcess | None = None
    key: ServerKey | None = None
    supervisor: ProcessGroup | None = None  # scripts/run.py, on the stack `make run` starts
    killed_primary: str = ""  # the HA node primary-killed killed, started again as its heal

    @property
    def env(self) -> BenchEnv:
        """Where the service's processes and manage.py point (the HA cluster's URL is known once it is created)."""
        return BenchEnv(self.pg.url(), self.redis.url)

    def processes(self) -> dict[str, dict]:
        """The supervisor's view of its processes (scripts/run.py writes it every second)."""
        try:
            return json.loads(STATE_FILE.read_text())["processes"]
        except (OSError, ValueError, KeyError):
            return {}

    def supervise(self) -> None:
        """`make run` itself (DEMO=0) on this stack's servers: its supervisor starts and restarts
        web, the projector, the worker and beat."""
        env = self.env.process_env(**SERVICE_ENV, PORT=str(self.port), DEMO="0", WEB_WORKERS="3", NO_COLOR="1",
                                   LEADERBOARD_PROCESS_STATE=str(STATE_FILE))  # fmt: skip
        command = [str(VENV_BIN / "python"), "scripts/run.py"]
        self.supervisor = ProcessGroup("run", command, env, REPO_ROOT, FAULTS_DIR / "run.log")

    def start(self, name: str) -> None:
        """The projector, the Celery worker or beat, as the suite's background starts them (bench/server.py)."""
        command = background_commands(FAULTS_DIR, append=False)[name]
        env = self.env.process_env(**SERVICE_ENV)
        self.procs[name] = ProcessGroup(name, command, env, REPO_ROOT, FAULTS_DIR / f"{name}.log")

    def kill(self, name: str, signum: int = signal.SIGKILL) -> None:
        self.procs[name].stop(signum, grace=20)

    def kill_primary(self) -> None:
        assert isinstance(self.pg, HACluster)
        self.killed_primary = self.pg.primary() or ""
        assert self.killed_primary, self.pg.states()
        self.pg.kill(self.killed_primary)

    def start_killed_primary(self) -> None:
        assert isinstance(self.pg, HACluster) and self.killed_primary
        self.pg.start_keeper(self.killed_primary)

    def stop(self) -> None:
        if self.supervisor is not None:
            self.supervisor.stop(signal.SIGINT, grace=60)  # Ctrl-C: it stops its processes itself
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM)
        if self.web is not None:
            self.web.stop()
        self.redis.destroy()
        with contextlib.suppress(Exception):  # stopped already by a fault, or never started
            self.pg.stop()


def stack_up(*, ha: bool = False, supervised: bool = False) -> Stack:
    """The servers and the service; `ha`: Postgres as a primary with a synchronous standby and
    automatic failover (scripts/ha.py) instead of one server; `supervised`: the service's
    processes started by `make run`'s supervisor (scripts/run.py) instead of by this suite."""
    if not ha:  # the HA stack may run beside a plain one: each keeps to its own directory
        shutil.rmtree(FAULTS_DIR, ignore_errors=True)
    FAULTS_DIR.mkdir(parents=True, exist_ok=True)
    pg = HACluster(FAULTS_DIR / "ha", first_port=_free_port(HA_FIRST_PORT + 200)) if ha else LocalPostgres(FAULTS_DIR)
    local_redis = LocalRedis(FAULTS_DIR)
    log(f"starting PostgreSQL ({'primary + synchronous standby' if ha else 'one server'}) and Redis on "
        f"127.0.0.1:{local_redis.port} under {FAULTS_DIR}")  # fmt: skip
    # the HA stack's web port apart from the plain one's: a plain stack just stopped may still
    # hold its port for a moment
    port = _free_port(HA_WEB_PORT if ha else _preferred_port("FAULTS_WEB_PORT", WEB_PORT))
    stack = Stack(pg, local_redis, port)
    try:
        pg.create()
        local_redis.start()
        environment.manage(stack.env, "migrate", "--noinput")
        environment.manage(stack.env, "apply_game_config", str(environment.GAME_FILE))
        stack.key = environment.create_server_key(stack.env)
        # Chosen again now: in the tens of seconds the servers took to come up, something else
        # on the machine may have taken it (nginx then fails: "bind() ... Address already in use").
        stack.port = _free_port(stack.port)
        if supervised:
            stack.supervise()
            _wait("web", lambda: _request(stack, "GET", "/healthz")[0] == 200, timeout=90)
            _wait("make run's processes", lambda: all(p["up"] for p in stack.processes().values())
                  and len(stack.processes()) >= 4, timeout=60)  # fmt: skip
        else:
            stack.web = ServerProcess(
                "web", stack.env, workers=3, ready_timeout=90, extra_env=SERVICE_ENV, port=stack.port
            )
            stack.web.start()
            for name in ("projector", "worker", "beat"):
                stack.start(name)
        # Faults strike a service that is whole: the worker and beat beating, the board index
        # built (by the worker's first heal), the projector running. A fault that hit the worker
        # while it was still starting measured its start-up instead (on a busy machine it takes
        # seconds), and reads stayed degraded to the end for want of the index.
        _wait("the whole service (/healthz status ok)", lambda: _status(stack) == "ok", timeout=90)
    except BaseException:  # nothing of a stack that did not come up is left running
        print_logs(stack)  # whatever had started, supervised or not
        stack.stop()
        raise
    return stack


# --- the faults -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """What breaks the stack (`inject`) and what mends it (`heal`), on the stack it needs."""

    name: str
    inject: Callable[[Stack], object]
    heal: Callable[[Stack], object]
    ha: bool = False  # runs on the primary + synchronous standby stack (stack_up(ha=True))
    supervised: bool = False  # runs on the stack `make run`'s supervisor starts (stack_up(supervised=True))


FAULTS = {
    fault.name: fault
    for fault in (
        # restarted empty: it kept nothing on disk
        Fault("redis-killed", lambda s: s.redis.signal(signal.SIGKILL), lambda s: s.redis.start()),
        Fault("redis-hung", lambda s: s.redis.signal(signal.SIGSTOP), lambda s: s.redis.signal(signal.SIGCONT)),
        Fault("postgres-stopped", lambda s: s.pg.stop(), lambda s: s.pg.start()),
        Fault("worker-killed", lambda s: s.kill("worker"), lambda s: s.start("worker")),
        # The process that applies stored matches to values and boards, killed mid-batch or between
        # a batch's commit and its Redis write: the pending rows and the outbox carry on.
        Fault("projector-killed", lambda s: s.kill("projector"), lambda s: s.start("projector")),
        # Redis kill -9 and restarted empty under `make run` itself: the worker may die of it (kombu's
        # restore_unacked on a lost connection) and is restarted by the supervisor; the index is
        # rebuilt and every acknowledged result reaches the board without a person.
        Fault("run-redis-killed", lambda s: s.redis.signal(signal.SIGKILL), lambda s: s.redis.start(), supervised=True),
        # Redis paused (SIGSTOP: it takes connections and answers nothing) under `make run` itself:
        # every submission must still be answered 2xx quickly (docs/reliability.md, "Redis hung").
        Fault(
            "run-redis-hung",
            lambda s: s.redis.signal(signal.SIGSTOP),
            lambda s: s.redis.signal(signal.SIGCONT),
            supervised=True,
        ),
        # kill -9 of the primary database machine (its pg_auto_failover keeper, postgres and every
        # backend) under load: the monitor promotes the synchronous standby, the service's pools
        # find it through the multi-host DATABASE_URL. Healed by starting the dead node again,
        # which rejoins as the new primary's standby.
        Fault("primary-killed", lambda s: s.kill_primary(), lambda s: s.start_killed_primary(), ha=True),
    )
}


# --- load -----------------------------------------------------------------------------------


def _status(stack: Stack) -> str:
    """/healthz's overall status ("ok" or "degraded"), or what kept it from answering."""
    code, raw = _request(stack, "GET", "/healthz")
    try:
        return str(json.loads(raw)["status"]) if code == 200 else f"HTTP {code}"
    except (ValueError, KeyError):
        return f"HTTP {code}: {raw[:200]!r}"


def _request(stack: Stack, method: str, path: str, body: bytes = b"", signed: bool = False) -> tuple[int, bytes]:
    headers = signed_headers(stack.key, method, path, body) if signed and stack.key else []
    return http_request(stack.port, method, path, body, headers)


@dataclass
class Sample:
    at: float
    kind: str  # submit | top
    status: int
    seconds: float
    healthy: bool
    match: tuple[str, str] | None = None  # (match_id, player) of an acknowledged submission
    body: bytes = b""  # the start of an unhealthy answer, for the failure report


@dataclass
class Outcome:
    fault: str
    tried: int
    acknowledged: int
    lost: int
    unavailable: int  # 503 with Retry-After: the documented answer while Postgres is down
    server_errors: int  # any other 5xx, or no answer at all
    slowest_submit: float
    recovery: float | None
    slowest_read: float = 0.0  # /top while the fault lasted, the first answer after it began excepted
    writes_back: float | None = 0.0  # from the fault to the first 2xx submission after the last failed one
    processes: dict[str, dict] | None = None  # under `make run`: the supervisor's state at the end
    slowest_answer: float = 0.0  # of every request begun while the fault lasted, none excepted
    submit_p99: float = 0.0  # of every submission of the run, the fault's included
    # the submissions not answered 2xx, by status and error code ("503 overloaded": n)
    refused: dict[str, int] = field(default_factory=dict)
    # after the heal, what was not healthy ("top 200 degraded": n), and the last such answer's start
    unhealthy_after_heal: dict[str, int] = field(default_factory=dict)
    last_unhealthy: str = ""

    @property
    def failed(self) -> list[str]:
        """Why this fault failed: anything lost; under `make run` also not healed, or a process down."""
        why = [f"{self.lost} acknowledged results lost"] if self.lost else []
        if self.processes is not None:
            if self.recovery is None:
                why.append("never healed")
            why += [f"{name} down" for name, p in sorted(self.processes.items()) if not p["up"]]
            if not self.processes:
                why.append("the supervisor's state file is missing")
        return why


def _settled(samples: list[Sample], lock: threading.Lock, now: float) -> bool:
    """Writes and reads answered, all healthy, over the last SETTLED_SECONDS."""
    with lock:
        recent = [s for s in samples if s.at >= now - SETTLED_SECONDS - 0.5]
    kinds = {s.kind for s in recent}
    return {"submit", "top"} <= kinds and all(s.healthy for s in recent)


def run_fault(stack: Stack, fault: Fault, seconds: float, rate: float, submitters: int = 2) -> Outcome:
    samples: list[Sample] = []
    lock = threading.Lock()
    stop = threading.Event()
    started = time.monotonic()
    tag = f"{fault.name}-{int(time.time())}"

    def sample(kind: str, path: str, body: bytes = b"", match: tuple[str, str] | None = None) -> float:
        """One request: a submission when it has a body (signed), else a read; the seconds it took."""
        t0 = time.monotonic()
        status, raw = _request(stack, "POST" if body else "GET", path, body, signed=bool(body))
        took = time.monotonic() - t0
        healthy = status in (200, 201) if body else status == 200 and b'"degraded"' not in raw
        unhealthy = b"" if healthy else raw[:300]
        with lock:
            samples.append(Sample(t0 - started, kind, status, took, healthy, match if healthy else None, unhealthy))
        return took

    def submitter(worker: int) -> None:
        for n in itertools.count(1):
            if stop.is_set():
                return
            match_id, player, score = f"{tag}-{worker}-{n}", f"f{worker}x{n}-{tag}", 1000 + n
            body = json.dumps(ingest.match(match_id, player, "rating", score)).encode()
            took = sample("submit", f"/api/v1/games/{GAME}/matches", body, (match_id, player))
            stop.wait(max(0.0, submitters / rate - took))  # the submitters share the rate

    def reader() -> None:
        while not stop.is_set():
            sample("top", f"/api/v1/games/{GAME}/boards/rating/top?limit=10")
            stop.wait(0.1)

    threads = [threading.Thread(target=submitter, args=(i,)) for i in range(submitters)]
    threads.append(threading.Thread(target=reader))
    for t in threads:
        t.start()
    inject_at, heal_at = seconds * 0.25, seconds * 0.6
    time.sleep(inject_at)
    injected = time.monotonic() - started
    fault.inject(stack)
    time.sleep(heal_at - inject_at)
    fault.heal(stack)
    healed = time.monotonic() - started
    time.sleep(max(0.0, seconds - heal_at))
    # A healed fault may take longer to heal than the window leaves (a restarted projector boots
    # Django, then drains what waited; until then admission control refuses new writes): the
    # load goes on until writes and reads have both been healthy for a second, or give up.
    give_up = time.monotonic() + RECOVERY_LIMIT_SECONDS
    while time.monotonic() < give_up and not _settled(samples, lock, time.monotonic() - started):
        time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join()

    samples.sort(key=lambda s: s.at)

    def between(start: float, end: float = float("inf"), kind: str = "") -> list[Sample]:
        return [s for s in samples if start <= s.at <= end and kind in ("", s.kind)]

    def recovered_at(kind: str) -> float | None:
        after = between(healed, kind=kind)
        # recovered: the first healthy answer from which every later one is healthy too
        for i, s in enumerate(after):
            if all(x.healthy for x in after[i:]):
                return s.at + s.seconds
        return None

    ends = [recovered_at("submit"), recovered_at("top")]
    recovery = None if None in ends else max(0.0, max(ends) - healed)  # type: ignore[type-var]
    acked = [s.match for s in samples if s.match is not None]
    lost = count_lost(stack, acked)
    if stack.supervisor is not None:  # every process up again, as the supervisor sees it
        with contextlib.suppress(RuntimeError):
            _wait("make run's processes", lambda: all(p["up"] for p in stack.processes().values()), timeout=60)
    submits = between(injected, kind="submit")
    failed = [s for s in submits if not s.healthy]
    writes_back: float | None = 0.0
    if failed:
        back = [s for s in submits if s.healthy and s.at > failed[-1].at]
        writes_back = back[0].at + back[0].seconds - injected if back else None
    during = between(inject_at, heal_at)
    sick = [s for s in between(healed) if not s.healthy]
    unhealthy = Counter(f"{s.kind} {s.status}{' degraded' if b'degraded' in s.body else ''}" for s in sick)
    # a read in flight when the fault struck pays its timeout once; the breaker answers the rest
    reads = [s for s in during if s.kind == "top"][1:]
    return Outcome(
        fault=fault.name,
        tried=len(samples),
        acknowledged=len(acked),
        lost=lost,
        unavailable=sum(1 for s in samples if s.status == 503),
        server_errors=sum(1 for s in samples if (s.status >= 500 and s.status != 503) or s.status == 0),
        slowest_submit=max((s.seconds for s in during if s.kind == "submit"), default=0.0),
        recovery=recovery,
        slowest_read=max((s.seconds for s in reads), default=0.0),
        writes_back=writes_back,
        slowest_answer=max((s.seconds for s in during), default=0.0),
        submit_p99=percentile(sorted(s.seconds for s in samples if s.kind == "submit"), 99) or 0.0,
        refused=dict(
            Counter(f"{s.status} {_error_code(s.body)}" for s in samples if s.kind == "submit" and not s.healthy)
        ),
        processes=stack.processes() if stack.supervisor is not None else None,
        unhealthy_after_heal=dict(unhealthy),
        last_unhealthy=sick[-1].body.decode(errors="replace") if sick else "",
    )


def _error_code(body: bytes) -> str:
    """The error code at the start of an answer (docs/api.md §14), or "-"."""
    found = re.search(rb'"code":\s*"([a-z_]+)"', body)
    return found.group(1).decode() if found else "-"


def count_lost(stack: Stack, acked: list[tuple[str, str]]) -> int:
    """Acknowledged results missing from Postgres, or not on the board once it settled."""
    if not acked:
        return 0
    match_ids, players = [m for m, _ in acked], [p for _, p in acked]
    with psycopg.connect(stack.pg.url()) as conn:
        stored = {m for (m,) in conn.execute("SELECT match_id FROM scores_match WHERE match_id = ANY(%s)", [match_ids])}
        ids = dict(conn.execute("SELECT external_id, id FROM scores_player WHERE external_id = ANY(%s)", [players]))
        board_id = conn.execute("SELECT id FROM scores_board WHERE slug = 'rating'").fetchone()[0]
    missing_pg = sum(1 for m in match_ids if m not in stored)
    r = redis.Redis.from_url(stack.redis.url)
    members = [str(ids[p]) for p in players if p in ids]
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        scores = r.zmscore(environment.board_set_key(board_id), members) if members else []
        off_board = sum(1 for s in scores if s is None)
        if off_board == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return missing_pg + off_board


def print_table(outcomes: list[Outcome]) -> None:
    print(
        f"{'fault':<18} {'tried':>6} {'acked':>6} {'lost':>5} {'503':>5} {'other 5xx':>9} {'slowest submit':>15} "
        f"{'slowest read':>13} {'slowest answer':>15} {'writes back':>11} {'recovery':>9}"
    )
    for o in outcomes:
        recovery = f"{o.recovery:.2f} s" if o.recovery is not None else "never"
        back = f"{o.writes_back:.2f} s" if o.writes_back is not None else "never"
        print(
            f"{o.fault:<18} {o.tried:>6} {o.acknowledged:>6} {o.lost:>5} {o.unavailable:>5} {o.server_errors:>9} "
            f"{o.slowest_submit:>13.3f} s {o.slowest_read:>11.3f} s {o.slowest_answer:>13.3f} s {back:>11} "
            f"{recovery:>9}"
        )
    for o in outcomes:
        if o.processes is not None:
            seen = ", ".join(
                f"{name} {'up' if p['up'] else 'DOWN'} ({p['restarts']} restarts"
                + (f", last: {p['last_exit']})" if p["last_exit"] else ")")
                for name, p in sorted(o.processes.items())
            )
            print(f"{o.fault}: make run's processes at the end: {seen}")
    for o in outcomes:
        if o.failed:
            print(f"{o.fault}: FAILED: {'; '.join(o.failed)}")
        if o.recovery is None or o.lost:
            print(f"{o.fault}: unhealthy after the heal: {o.unhealthy_after_heal}; the last: {o.last_unhealthy!r}")


def print_logs(stack: Stack, lines: int = 80) -> None:
    """The tails of the stack's own logs (projector, worker, beat, web), for a run that failed."""
    for path in sorted(FAULTS_DIR.glob("*.log")):
        tail = path.read_text(errors="replace").splitlines()[-lines:]
        print("\n".join([f"--- last {lines} lines of {path}", *tail]))
    if stack.web is not None:
        print(stack.web.log_tail())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="load per fault (default %(default)s)")
    parser.add_argument("--rate", type=float, default=8.0, help="submissions per second (default %(default)s)")
    parser.add_argument("--submitters", type=int, default=2, help="concurrent submitting clients (default %(default)s)")
    parser.add_argument("--only", help="comma-separated fault names: " + ", ".join(FAULTS))
    args = parser.parse_args(argv)
    chosen = [f for f in FAULTS.values() if not args.only or f.name in args.only.split(",")]
    if not chosen:
        parser.error("no such fault")
    outcomes = []
    for on_ha, supervised in ((False, False), (False, True), (True, False)):
        group = [f for f in chosen if f.ha == on_ha and f.supervised == supervised]
        if not group:
            continue
        stack = stack_up(ha=on_ha, supervised=supervised)
        try:
            for fault in group:
                log(f"{fault.name}: {args.seconds:.0f} s of signed load, fault at 25 %, healed at 60 %")
                outcomes.append(run_fault(stack, fault, args.seconds, args.rate, args.submitters))
        finally:
            stack.stop()
    print_table(outcomes)
    return 1 if any(o.failed for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
