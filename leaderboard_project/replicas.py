"""Reads that may lag a little go to a streaming replica (DATABASE_REPLICA_URL); everything else,
and every write, stays on the primary. docs/operations.md, "Read replicas".

- Which reads: views marked `replica_reads = True` (a function attribute, or a class attribute of
  a DRF / class-based view), the admin's list pages, and code inside `lagging_reads()` (the
  histogram refresh). Sessions and users are always read from the primary.
- When: only while the replica is reachable and its lag is within DATABASE_REPLICA_MAX_LAG
  seconds. A thread per process measures it every 0.5 s: it notes the primary's WAL position at
  a moment, and the replica is "caught up to" that moment once it has replayed that position, so
  the lag is an upper bound on how old the replica's data is (not the replay timestamp, which
  says nothing while the replica has stopped receiving). Requests never wait for the check.
- Never a caller's own write: a request that writes reads the primary from then on; a browser
  that posted gets a cookie with the time of its write, a game server's key a marker in the
  shared cache, and their lagging reads use the replica only once it is caught up past that
  time (with Redis down, signed callers' lagging reads go to the primary).
- The replica failing under a read: the GET is answered again from the primary, not with a 503.

Raw SQL reads take their connection from `read_connection()` (the router covers the ORM).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest, HttpResponse

log = logging.getLogger(__name__)

REPLICA = "replica"
CHECK_EVERY = 0.5  # seconds between two measurements of the lag
STALE_AFTER = 3.0  # a measurement older than this (the checker is stuck): the replica counts as down
WROTE_COOKIE = "lb_wrote"
WROTE_MARGIN = 1.0  # seconds added to a write's time: clocks of web nodes differ a little
# Models whose rows a request reads back after writing them elsewhere (sign-in, then any page)
PRIMARY_ONLY_APPS = frozenset({"sessions", "auth", "contenttypes", "admin"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def configured() -> bool:
    return REPLICA in settings.DATABASES


# --- the lag ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplicaState:
    up: bool
    lag: float | None  # seconds: the replica has every commit older than this
    error: str = ""
    measured_at: float = 0.0  # time.monotonic() of the measurement
    caught_up_to: float = 0.0  # time.time() before which the replica has every commit


class ReplicaMonitor:
    """Measures the replica's lag on a thread of its own (never on a request's)."""

    def __init__(self) -> None:
        self._state = ReplicaState(up=False, lag=None, error="not measured yet")
        self._samples: deque[tuple[float, int]] = deque(maxlen=600)  # (time.time() before, primary LSN)
        self._primary: Any = None
        self._replica: Any = None
        self._started = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._loop, name="replica-lag", daemon=True).start()

    def state(self) -> ReplicaState:
        self.start()
        state = self._state
        if state.up and time.monotonic() - state.measured_at > STALE_AFTER:
            return ReplicaState(up=False, lag=None, error="no recent measurement", measured_at=state.measured_at)
        return state

    def mark_down(self, error: str) -> None:
        """A request saw the replica fail: stop sending reads until the next good measurement."""
        self._state = ReplicaState(up=False, lag=None, error=error, measured_at=time.monotonic())

    def _loop(self) -> None:
        while True:
            try:
                self._state = self._measure()
            except Exception as exc:  # any failure: down until a measurement succeeds
                if self._state.up:
                    log.warning("read replica unusable, lagging reads go to the primary: %s", exc)
                self._state = ReplicaState(up=False, lag=None, error=f"{exc.__class__.__name__}: {exc}"[:200],
                                           measured_at=time.monotonic())  # fmt: skip
                self._close()
            time.sleep(CHECK_EVERY)

    def _connect(self, alias: str) -> Any:
        import psycopg

        from leaderboard_project.database import connect_params

        params = {**connect_params(settings.DATABASES[alias]), "connect_timeout": 2, "application_name": "replica-lag"}
        return psycopg.connect(**params, autocommit=True)

    def _close(self) -> None:
        for conn in (self._primary, self._replica):
            with contextlib.suppress(Exception):
                if conn is not None:
                    conn.close()
        self._primary = self._replica = None

    def _measure(self) -> ReplicaState:
        before = time.time()
        with contextlib.suppress(Exception):  # the primary down: the replica's lag grows from its last sample
            if self._primary is None or self._primary.closed:
                self._primary = self._connect(DEFAULT_DB_ALIAS)
            (lsn,) = self._primary.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
            self._samples.append((before, int(lsn)))
        if self._replica is None or self._replica.closed:
            self._replica = self._connect(REPLICA)
        recovery, replayed = self._replica.execute(
            "SELECT pg_is_in_recovery(), COALESCE(pg_last_wal_replay_lsn(), pg_current_wal_lsn()) - '0/0'::pg_lsn"
        ).fetchone()
        now = time.time()
        if not recovery:  # promoted (or not a standby at all): it has everything it will ever have
            caught_up_to = now
        else:
            caught = [t for t, lsn in self._samples if lsn <= int(replayed)]
            caught_up_to = max(caught) if caught else 0.0
        lag = max(0.0, now - caught_up_to) if caught_up_to else None
        if not self._state.up:
            log.info("read replica usable (lag %s s)", f"{lag:.1f}" if lag is not None else "unknown")
        return ReplicaState(up=True, lag=lag, measured_at=time.monotonic(), caught_up_to=caught_up_to)


monitor = ReplicaMonitor()


def replica_status() -> dict[str, Any] | None:
    """For /healthz and /metrics: None without a replica, else its state and lag."""
    if not configured():
        return None
    state = monitor.state()
    bound = settings.DATABASE_REPLICA_MAX_LAG
    if not state.up:
        text = f"down: {state.error}"
    elif state.lag is None or state.lag > bound:
        text = f"lagging: {'unknown' if state.lag is None else f'{state.lag:.1f} s'} (> {bound:g} s: reads go to the primary)"
    else:
        text = "ok"
    return {"state": text, "up": state.up, "lag_seconds": state.lag, "max_lag_seconds": bound}


# --- which reads go where --------------------------------------------------------------------


@dataclass
class _Scope:
    lagging_ok: bool = False
    wrote: bool = False  # this request wrote: it reads the primary from now on
    used: bool = False  # a read went to the replica
    not_before: float = 0.0  # time.time() the replica must be caught up to (the caller's last write)


_scope: ContextVar[_Scope | None] = ContextVar("replica_scope", default=None)


def _usable(scope: _Scope) -> bool:
    state = monitor.state()
    return (
        state.up
        and state.lag is not None
        and state.lag <= settings.DATABASE_REPLICA_MAX_LAG
        and state.caught_up_to > scope.not_before
    )


def read_alias() -> str:
    """The database a lagging-tolerant read in the current context should use."""
    scope = _scope.get()
    if scope is None or not scope.lagging_ok or scope.wrote or not configured() or not _usable(scope):
        return DEFAULT_DB_ALIAS
    scope.used = True
    return REPLICA


def read_connection() -> BaseDatabaseWrapper:
    """The connection for a raw SQL read that may lag (the primary's outside lagging contexts)."""
    return connections[read_alias()]


def in_this_context(iterator: Iterator[Any]) -> Iterator[Any]:
    """`iterator` run, item by item, in the context it was made in: a streamed answer's rows are
    read after the view returned, outside the request's scope otherwise."""
    context = contextvars.copy_context()  # now, in the view (a generator's body would run later)

    def run() -> Iterator[Any]:
        while True:
            try:
                yield context.run(next, iterator)
            except StopIteration:
                return

    return run()


@contextlib.contextmanager
def lagging_reads(*, not_before: float = 0.0) -> Iterator[None]:
    """Reads inside may come from the replica (a Celery task's, a command's)."""
    outer = _scope.get()
    token = _scope.set(_Scope(lagging_ok=True, not_before=max(not_before, outer.not_before if outer else 0.0)))
    try:
        yield
    finally:
        _scope.reset(token)


class ReplicaRouter:
    """DATABASE_ROUTERS: lagging-tolerant ORM reads to the replica, the rest to the primary."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        if model._meta.app_label in PRIMARY_ONLY_APPS:
            return DEFAULT_DB_ALIAS
        return read_alias()

    def db_for_write(self, model: type, **hints: Any) -> str:
        scope = _scope.get()
        if scope is not None:
            scope.wrote = True
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the same data, wherever it was read

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


def _marker_key(key_id: str) -> str:
    return f"replica-wrote:{key_id}"


_marked: dict[str, float] = {}  # key id -> time.time() its marker was last set by this process


def _caller_wrote_at(request: HttpRequest) -> float | None:
    """When this caller last wrote (a time after its write), 0 if not lately; None when unknown."""
    at = 0.0
    with contextlib.suppress(ValueError):
        at = float(request.COOKIES.get(WROTE_COOKIE, "0"))
    key_id = request.headers.get("X-Key-Id")
    if key_id:
        from django.core.cache import cache

        try:
            # the client itself, not the cache's wrapper that hides errors: unknown is not "never"
            marked = cache.client.get(_marker_key(key_id), default=None)  # type: ignore[attr-defined]
        except Exception:
            return None
        at = max(at, float(marked or 0.0))
    return at


def _mark_caller(request: HttpRequest, response: HttpResponse) -> None:
    now = time.time()
    key_id = request.headers.get("X-Key-Id")
    if key_id:
        from django.core.cache import cache

        # at most one cache write per key per half second per process; the value covers the
        # writes until the next one (now + 1 s)
        if _marked.get(key_id, 0.0) + 0.5 < now:
            cache.set(
                _marker_key(key_id), now + WROTE_MARGIN, timeout=max(60, int(settings.DATABASE_REPLICA_MAX_LAG * 4))
            )
            _marked[key_id] = now
    else:
        response.set_cookie(
            WROTE_COOKIE, f"{now + WROTE_MARGIN:.3f}", max_age=max(60, int(settings.DATABASE_REPLICA_MAX_LAG * 4)),
            httponly=True, samesite="Lax", secure=settings.SESSION_COOKIE_SECURE,
        )  # fmt: skip


def replica_reads(view: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a view whose reads may lag a little (DATABASE_REPLICA_MAX_LAG): they may go to the replica."""
    try:
        view.replica_reads = True  # type: ignore[attr-defined]
    except AttributeError:  # a bound method: mark a wrapper
        view = functools.wraps(view)(functools.partial(view))
        view.replica_reads = True  # type: ignore[attr-defined]
    return view


def _lagging_view(request: HttpRequest, view_func: Callable[..., Any]) -> bool:
    if request.method not in SAFE_METHODS:
        return False
    if getattr(view_func, "replica_reads", False):
        return True
    for attr in ("view_class", "cls"):  # Django's class-based views, DRF's
        if getattr(getattr(view_func, attr, None), "replica_reads", False):
            return True
    match = request.resolver_match
    return bool(match and match.app_name == "admin" and (match.url_name or "").endswith("_changelist"))


class ReplicaReadsMiddleware:
    """Opens the request's routing scope; marks callers that wrote; answers a GET again from the
    primary when the replica failed under it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not configured():
            return self.get_response(request)
        scope = _Scope()
        token = _scope.set(scope)
        try:
            response = self.get_response(request)
            if scope.used and response.status_code == 503 and request.method in SAFE_METHODS:
                monitor.mark_down("a read on it failed")
                scope.lagging_ok, scope.used = False, False
                response = self.get_response(request)
        finally:
            _scope.reset(token)
        if request.method not in SAFE_METHODS and response.status_code < 400:
            _mark_caller(request, response)
        return response

    def process_view(self, request: HttpRequest, view_func: Callable[..., Any], args: Any, kwargs: Any) -> None:
        scope = _scope.get()
        if scope is None or not _lagging_view(request, view_func):
            return None
        wrote_at = _caller_wrote_at(request)
        if wrote_at is None:  # cannot tell whether this caller wrote lately: the primary
            return None
        scope.lagging_ok, scope.not_before = True, wrote_at
        return None
