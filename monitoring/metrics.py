"""/metrics in the Prometheus text format (docs/operations.md lists every metric).

Counters and histograms are prometheus-client's. Under gunicorn and uvicorn (scripts/web.py)
every process writes its own values to PROMETHEUS_MULTIPROC_DIR, a fresh directory per run,
and a scrape sums them (multiprocess mode); without it (a test, `manage.py runserver`) the
values are this process's. What is a state rather than a count (the ingest lag, heartbeats, the
board index) is read from Postgres and Redis at scrape time by LiveCollector.

What is counted where:
- requests: RequestMetricsMiddleware, first in MIDDLEWARE, per route pattern and method;
- submitted matches by outcome: the same middleware reads the answer (docs/api.md §4) of the two
  submission routes (a match's status, `duplicate`, a 400 or 409), so ingest code is untouched;
  so are submissions refused 503 `overloaded` (admission control);
- Redis errors: monitoring.redis, the connection class of the boards' and cache's pool;
- Postgres errors: an execute wrapper on every connection, plus errors that escape a view
  (connecting failed);
- open websockets: monitoring.asgi, around the Channels application."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SUBMIT_ROUTES = {"matches-submit", "matches-batch"}
UNMATCHED = "(unmatched)"
disable_created_metrics()  # no *_created series: half the lines, nothing a dashboard reads

REQUESTS = Counter(
    "leaderboard_http_requests",
    "HTTP requests answered, by route pattern, method and status",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "leaderboard_http_request_duration_seconds",
    "Time from the first middleware to the answer, by route pattern and method",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
MATCHES = Counter(
    "leaderboard_matches_submitted",
    "Submitted matches (single or in a batch) by outcome: accepted, held, rejected, duplicate, conflict",
    ["game", "status"],
)
REFUSED = Counter(
    "leaderboard_ingest_refused",
    "Submissions answered 503 overloaded (admission control, docs/api.md §4.5): nothing of them stored",
    ["game", "route"],
)
REDIS_ERRORS = Counter("leaderboard_redis_errors", "Failed Redis connects, sends and reads", ["error"])
POSTGRES_ERRORS = Counter("leaderboard_postgres_errors", "Failed Postgres statements and connections", ["error"])
WEBSOCKETS = Gauge(
    "leaderboard_websockets_open", "Websockets open now (summed over live processes)", multiprocess_mode="livesum"
)


# --- requests -------------------------------------------------------------------------------


class RequestMetricsMiddleware:
    """Times every request and counts its answer; counts submitted matches by outcome."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None else UNMATCHED
        LATENCY.labels(route, request.method).observe(time.perf_counter() - started)
        REQUESTS.labels(route, request.method, str(response.status_code)).inc()
        if match is not None and match.url_name in SUBMIT_ROUTES:
            _count_matches(match.kwargs.get("game", ""), match.url_name, response)
        return response


def _count_matches(game: str, route: str, response: HttpResponse) -> None:
    """From the answer (docs/api.md §4) (sections 4 and 12): nothing of ingest has to know."""
    data = getattr(response, "data", None)
    status = response.status_code
    if status == 503 and isinstance(data, dict) and data.get("error", {}).get("code") == "overloaded":
        REFUSED.labels(game, route).inc()
        return
    if not isinstance(data, dict) or status in (401, 403, 404, 413) or status >= 500:
        return  # not a decision on a match (unauthenticated, unknown game...)
    if route == "matches-batch":
        items = data.get("results") if status == 200 else None
        # counted per outcome, then added: a label lookup per match was 5% of a batch's CPU
        outcomes = Tally(
            "duplicate" if item.get("duplicate") else item.get("status", "rejected")
            for item in (items if isinstance(items, list) else ())
        )
        for outcome, n in outcomes.items():
            MATCHES.labels(game, outcome).inc(n)
        return
    if status in (200, 201):
        MATCHES.labels(game, "duplicate" if data.get("duplicate") else data.get("status", "accepted")).inc()
    elif status == 409:
        MATCHES.labels(game, "conflict").inc()
    elif status == 400:
        MATCHES.labels(game, "rejected").inc()


# --- Postgres errors --------------------------------------------------------------------------


def _postgres_error(exc: BaseException) -> None:
    if not getattr(exc, "_leaderboard_counted", False):
        POSTGRES_ERRORS.labels(type(exc).__name__).inc()
        with contextlib.suppress(AttributeError):
            exc._leaderboard_counted = True  # type: ignore[attr-defined]


def _execute_counting(execute: Callable, sql: str, params: Any, many: bool, context: dict) -> Any:
    try:
        return execute(sql, params, many, context)
    except DatabaseError as exc:
        _postgres_error(exc)
        raise


def postgres_errors_watch(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created: count the statements of this connection that fail."""
    if _execute_counting not in connection.execute_wrappers:
        connection.execute_wrappers.append(_execute_counting)


def request_exception_count(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """got_request_exception: a database error no statement saw (connecting failed, a pool timeout)."""
    import sys

    exc = sys.exc_info()[1]
    if isinstance(exc, DatabaseError):
        _postgres_error(exc)


# --- states read at scrape time -------------------------------------------------------------


class LiveCollector:
    """The ingest lag, the workers' heartbeats and the board index, as they are now."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from monitoring import heartbeats, lag

        yield from _supervised()
        try:
            now_lag = lag.ingest_lag()
        except Exception:  # Postgres or Redis down: /healthz says which; the gauges are absent
            now_lag = None
        if now_lag is not None:
            yield GaugeMetricFamily(
                "leaderboard_ingest_lag_seconds",
                "Age of the oldest accepted result not yet on the boards (0: none waiting)",
                value=now_lag.seconds,
            )
            yield GaugeMetricFamily(
                "leaderboard_ingest_pending", "Accepted changes not yet on the boards", value=now_lag.pending
            )
        from leaderboard_project.replicas import replica_status

        replica = replica_status()
        if replica is not None:
            yield GaugeMetricFamily(
                "leaderboard_replica_up",
                "1 while the read replica answers this process's lag checks",
                value=float(replica["up"]),
            )
            if replica["lag_seconds"] is not None:
                yield GaugeMetricFamily(
                    "leaderboard_replica_lag_seconds",
                    "The read replica has every commit older than this (lagging reads go to the primary past the bound)",
                    value=replica["lag_seconds"],
                )
        try:
            beats = heartbeats.heartbeats_read()
        except Exception:
            return
        age = GaugeMetricFamily(
            "leaderboard_heartbeat_age_seconds", "Seconds since a component's last heartbeat", labels=["component"]
        )
        up = GaugeMetricFamily(
            "leaderboard_component_up", "1 while a component's heartbeat is fresh", labels=["component"]
        )
        for beat in beats:
            if beat.age is not None:
                age.add_metric([beat.component], beat.age)
            up.add_metric([beat.component], 1.0 if beat.fresh else 0.0)
        yield age
        yield up
        built = heartbeats.board_index_state()
        yield GaugeMetricFamily(
            "leaderboard_board_index_built", "1 once the Redis index was built from Postgres", value=float(built.built)
        )
        sampled, drift = heartbeats.index_drift()
        yield CounterMetricFamily(
            "leaderboard_index_sampled", "Board index members the sampler compared with Postgres", value=sampled
        )
        yield CounterMetricFamily(
            "leaderboard_index_drift", "Sampled board index members that differed from Postgres (repaired)", value=drift
        )


def _supervised() -> Iterator[Any]:
    """The processes `make run` supervises, from its state file (no Redis: it may be what is down)."""
    from monitoring import processes

    try:
        supervised = processes.processes_read()
    except (OSError, ValueError, KeyError, TypeError):
        return
    if supervised is None:
        return
    up = GaugeMetricFamily(
        "leaderboard_process_up", "1 while the supervisor (make run) has that process running", labels=["process"]
    )
    restarts = CounterMetricFamily(
        "leaderboard_process_restarts",
        "Times the supervisor (make run) started a process again after it exited on its own",
        labels=["process"],
    )
    for p in supervised.processes:
        up.add_metric([p.name], 1.0 if p.up and supervised.fresh else 0.0)
        restarts.add_metric([p.name], p.restarts)
    yield up
    yield restarts
    yield GaugeMetricFamily(
        "leaderboard_process_state_age_seconds",
        "Seconds since the supervisor last wrote its process state (it writes every second)",
        value=supervised.age,
    )


def _dead_processes_forget(path: str) -> None:
    """Forget the live gauges of processes that died without saying so (a killed worker)."""
    from prometheus_client import multiprocess

    pids = set()
    for name in os.listdir(path):
        stem = name.rsplit(".", 1)[0]
        if "_" in stem and stem.rsplit("_", 1)[1].isdigit():
            pids.add(int(stem.rsplit("_", 1)[1]))
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            multiprocess.mark_process_dead(pid, path)
        except PermissionError:
            pass


def scrape(accept: str = "") -> tuple[bytes, str]:
    """The whole exposition, in the format the Accept header asks for (the text format 0.0.4
    that every Prometheus reads, unless it asks for OpenMetrics or text 1.0.0): every process's
    values (multiprocess mode) or this one's, then the states read now."""
    registry = CollectorRegistry()
    path = os.environ.get(MULTIPROC_DIR_ENV)
    if path:
        from prometheus_client import multiprocess

        _dead_processes_forget(path)
        multiprocess.MultiProcessCollector(registry, path=path)
    else:
        from prometheus_client import REGISTRY

        registry.register(_Everything(REGISTRY))
    registry.register(LiveCollector())
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type


class _Everything:
    """Another registry's metrics, as one collector of this one."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Any]:
        return self.registry.collect()


def metrics_view(request: HttpRequest) -> HttpResponse:
    body, content_type = scrape(request.headers.get("Accept", ""))
    return HttpResponse(body, content_type=content_type)
