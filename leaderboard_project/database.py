"""Postgres outages: answer fast, come back fast.

- A request that needs Postgres while it is down gets 503 with Retry-After and docs/api.md §14's
  error body (DatabaseUnavailableMiddleware), within DB_POOL_TIMEOUT (0.5 s by default) of
  asking the pool for a connection, never the 30 s it used to wait.
- Once the pool's latest attempt to connect has failed (Postgres unreachable, not merely busy), a
  request waits at most DB_UNREACHABLE_WAIT (0.05 s) for a pooled connection instead: requests
  queued behind one another on a web process no longer add their 0.5 s waits up past the 1 s a
  client may wait for an answer. The pool's next successful connection (it retries every
  RECONNECT_DELAY) ends that, and the first request after it gets the connection at once.
- psycopg_pool retries a failed connection after 1 s, doubling each time: after a 20 s outage
  its next attempt came up to 16 s after Postgres was back (service resumed 8.1 s late).
  RECONNECT_DELAY makes it retry at a steady pace instead, so service resumes within about
  a second of Postgres returning, without a restart.
- Several hosts (libpq's multi-host form, ``postgres://u@h1:5432,h2:5432/db?target_session_attrs=
  read-write``): every new connection asks each host in turn and keeps the first that takes writes,
  so after a failover the pools' next connections reach the new primary without a restart, and
  while there is none every attempt fails fast and requests answer 503 (docs/operations.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from psycopg_pool import ConnectionPool, PoolTimeout
from psycopg_pool.base import AttemptWithBackoff

RECONNECT_DELAY = 0.5  # seconds between the pool's attempts to reach Postgres again
# A request's wait for a pooled connection while the pool's last connection attempt failed.
UNREACHABLE_WAIT = float(os.environ.get("DB_UNREACHABLE_WAIT", "0.05"))
RETRY_AFTER_SECONDS = 1


def database_from_url(url: str, *, options: dict[str, Any]) -> dict[str, Any]:
    """A Django DATABASES entry for a postgres:// URL, one host or several.

    dj_database_url refuses a list of hosts; libpq takes them as comma-separated `host` and `port`
    values, which Django passes through. The URL's query (target_session_attrs, sslmode,
    load_balance_hosts, ...) goes to the connection's options, under *options* (ours win).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        raise ValueError(f"not a postgres:// URL: {parts.scheme}://...")
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    hosts, ports = [], []
    for item in hostlist.split(","):
        host, port = _host_port(item)
        hosts.append(host)
        ports.append(port)
    if len(set(ports)) == 1:
        ports = ports[:1]  # one port for every host, as libpq reads it
    elif "" in ports:
        raise ValueError("name a port for every host, or for none of them")
    query = dict(parse_qsl(parts.query))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(user),
        "PASSWORD": unquote(password),
        "HOST": ",".join(hosts),
        "PORT": ",".join(ports),
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": False,
        "OPTIONS": {**query, **options, **_joined_server_options(query, options)},
    }


def _joined_server_options(*sources: dict[str, Any]) -> dict[str, str]:
    """libpq's `options` (server settings at connect, `-c name=value ...`) from the URL and from
    the settings together, rather than one replacing the other."""
    given = [str(source["options"]) for source in sources if source.get("options")]
    return {"options": " ".join(given)} if given else {}


# Connection options that are libpq's own (the rest of OPTIONS is psycopg's or Django's).
_LIBPQ_OPTIONS = frozenset(
    {"connect_timeout", "target_session_attrs", "load_balance_hosts", "sslmode", "sslrootcert", "sslcert",
     "sslkey", "application_name", "tcp_user_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
     "keepalives_count", "options", "passfile", "channel_binding"}
)  # fmt: skip


def connect_params(database: dict[str, Any]) -> dict[str, Any]:
    """psycopg.connect() keywords for a DATABASES entry: for connections made outside Django's
    pool (the projector's LISTEN connection), reaching the same server the same way, the
    primary among several hosts included."""
    params = {k: v for k, v in database.get("OPTIONS", {}).items() if k in _LIBPQ_OPTIONS}
    for key, name in (
        ("NAME", "dbname"),
        ("USER", "user"),
        ("PASSWORD", "password"),
        ("HOST", "host"),
        ("PORT", "port"),
    ):
        if database.get(key):
            params[name] = str(database[key])
    return params


def _host_port(item: str) -> tuple[str, str]:
    if item.startswith("["):  # [::1]:5432
        host, _, rest = item[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = item.partition(":")
    if port and not port.isdigit():
        raise ValueError(f"bad port in {item!r}")
    return unquote(host), port


def pool_reconnect_steadily() -> None:
    """Called once from settings: every pool of the process retries every RECONNECT_DELAY s, and
    a request's waits for pooled connections share one budget (`_getconn_within_budget`)."""
    AttemptWithBackoff.INITIAL_DELAY = RECONNECT_DELAY
    AttemptWithBackoff.DELAY_BACKOFF = 1.0
    if not getattr(ConnectionPool.getconn, "within_budget", False):
        ConnectionPool.getconn = _getconn_within_budget(ConnectionPool.getconn)  # type: ignore[method-assign]
    if not getattr(ConnectionPool._connect, "noting_reachability", False):
        ConnectionPool._connect = _connect_noting_reachability(ConnectionPool._connect)  # type: ignore[method-assign]


def pool_unreachable(pool: ConnectionPool) -> bool:
    """True while the pool's latest attempt to open a connection failed."""
    return getattr(pool, "_leaderboard_unreachable", False)


def _connect_noting_reachability(connect: Callable[..., Any]) -> Callable[..., Any]:
    """Every new connection of a pool (its background workers open them) records whether Postgres
    answered: a refused or timed-out attempt marks the pool unreachable until one succeeds."""

    def wrapper(pool: ConnectionPool, timeout: float | None = None) -> Any:
        try:
            conn = connect(pool, timeout)
        except Exception:
            pool._leaderboard_unreachable = True  # type: ignore[attr-defined]
            raise
        pool._leaderboard_unreachable = False  # type: ignore[attr-defined]
        return conn

    wrapper.noting_reachability = True  # type: ignore[attr-defined]
    return wrapper


# The seconds a request may still spend waiting for pooled connections, None outside a request.
# A request whose first wait timed out (no primary) would otherwise wait again on its next
# query (a read that falls back from a stale cache, say): 0.5 s twice is a 1 s answer.
_pool_budget: ContextVar[list[float] | None] = ContextVar("pool_budget", default=None)


def _getconn_within_budget(getconn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(pool: ConnectionPool, timeout: float | None = None) -> Any:
        budget = _pool_budget.get()
        if budget is None:
            return getconn(pool, timeout)
        wanted = pool.timeout if timeout is None else timeout
        if budget[0] <= 0:
            raise PoolTimeout("this request already spent its wait for a database connection")
        if pool_unreachable(pool):  # a connection may still come back to the pool: a short look
            wanted = min(wanted, UNREACHABLE_WAIT)
        started = time.monotonic()
        try:
            return getconn(pool, min(wanted, budget[0]))
        finally:
            budget[0] -= time.monotonic() - started

    wrapper.within_budget = True  # type: ignore[attr-defined]
    return wrapper


def database_unavailable() -> HttpResponse:
    from leaderboard_project.errors import error_response  # (settings import this module: DRF not yet)

    response = error_response(
        "database_unavailable", "the durable store is unreachable; retry in a moment (nothing was changed)", 503
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Postgres unreachable (a refused or broken connection, the pool's timeout) is a 503,
    not a 500: the request changed nothing (its transaction, if any, never committed)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.pool_wait = float(settings.DATABASES["default"]["OPTIONS"].get("pool", {}).get("timeout", 0.5))

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # every wait for a pooled connection in this request comes out of one DB_POOL_TIMEOUT
        token = _pool_budget.set([self.pool_wait])
        try:
            return self.get_response(request)
        finally:
            _pool_budget.reset(token)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            return database_unavailable()
        return None
