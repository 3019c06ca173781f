"""GET /healthz (docs/api.md §11)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from leaderboard_project.replicas import replica_status
from monitoring import heartbeats, lag, processes
from rediskit.client import get_redis
from scores.locks import ALL_LANES
from scores.projection.runner import owned_lanes, ranges

OK = "ok"


def _down(exc: BaseException) -> str:
    return f"down: {exc.__class__.__name__}"


def _postgres() -> str:
    """On the request's own thread, which keeps its connection for the rest of the request."""
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
    except Exception as exc:  # any failure means "down" to an operator
        return _down(exc)
    return OK


def _standby() -> tuple[str, dict[str, Any]]:
    """With several database hosts (a primary and its standbys): whether a synchronous standby
    is attached, i.e. whether a 2xx now means the result is on two machines."""
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT application_name, sync_state FROM pg_stat_replication WHERE state = 'streaming'")
            standbys = dict(cur.fetchall())
    except Exception as exc:
        return f"unknown: {_down(exc)}", {}
    synchronous = sorted(n for n, s in standbys.items() if s in ("sync", "quorum"))
    detail = {"standbys": standbys}
    if not synchronous:
        return "none: acknowledged results are on the primary alone until a standby catches up", detail
    return OK, detail


def _redis() -> str:
    try:
        get_redis().ping()
    except Exception as exc:
        return _down(exc)
    return OK


def _projector() -> tuple[str, dict[str, Any]]:
    """Whether every lane of the pending matches has a running projector (scores/projection)."""
    try:
        owned = owned_lanes()
    except Exception as exc:
        return f"unknown: {_down(exc)}", {}
    missing = sorted(set(ALL_LANES) - owned)
    detail = {"owned_lanes": ranges(sorted(owned)), "unowned_lanes": ranges(missing)}
    if not owned:
        return "down: no projector is running (stored results do not reach the boards)", detail
    if missing:
        return f"partial: lanes {ranges(missing)} have no projector", detail
    return OK, detail


def _processes() -> tuple[str, dict[str, Any]] | None:
    """The supervisor's view of its processes (monitoring/processes.py); None when not supervised."""
    try:
        supervised = processes.processes_read()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"unknown: {_down(exc)}", {}
    if supervised is None:
        return None
    detail = {
        p.name: {
            "up": p.up,
            "restarts": p.restarts,
            "last_exit": p.last_exit,
            "restart_in_seconds": p.restart_in_seconds,
        }
        for p in supervised.processes
    }
    return processes.processes_health(supervised), {"state_age_seconds": round(supervised.age, 1), **detail}


def healthz(request: HttpRequest) -> JsonResponse:
    """{"postgres", "redis", "worker", "beat", "projector", "ingest_lag", "board_index", and under
    `make run` "processes": "ok" or what is wrong,
    "status": "ok" | "degraded", "details": {...}}. 503 when Postgres or Redis is down (the web
    tier cannot serve); 200 otherwise, with "status": "degraded" when the worker, beat, the lag
    or the index is not ok: results are then still accepted and stored, but reach the boards late."""
    details: dict[str, Any] = {}
    # both at once: each is bounded (Postgres by the pool's timeout, DB_POOL_TIMEOUT; Redis by
    # its socket timeout or its open breaker), so the answer comes within about a second
    with ThreadPoolExecutor(max_workers=1) as pool:
        redis_state = pool.submit(_redis)
        body: dict[str, Any] = {"postgres": _postgres(), "redis": redis_state.result()}
    if body["redis"] == OK:
        try:
            for beat in heartbeats.heartbeats_read():
                details[beat.component] = {
                    "seen_seconds_ago": beat.age,
                    "stale_after_seconds": heartbeats.STALE_SECONDS,
                }
                if beat.component == "worker":
                    details["worker"]["workers"] = beat.detail
                if beat.age is None:
                    body[beat.component] = "down: no heartbeat yet"
                else:
                    body[beat.component] = OK if beat.fresh else f"stale: last heartbeat {beat.age:.0f} s ago"
            index = heartbeats.board_index_state()
            details["board_index"] = {"built": index.built, "built_at": index.built_at}
            body["board_index"] = (
                OK if index.built else "rebuilding: the marker is missing (Redis restarted or flushed)"
            )
        except Exception as exc:
            body["worker"] = body["beat"] = body["board_index"] = f"unknown: {_down(exc)}"
    else:
        body["worker"] = body["beat"] = body["board_index"] = "unknown: Redis is down"
    if body["postgres"] == OK:
        body["projector"], details["projector"] = _projector()
    else:
        body["projector"] = "unknown: Postgres is down"
    if body["postgres"] == OK and body["redis"] == OK:
        try:
            now = lag.ingest_lag()
            details["ingest_lag"] = {
                "seconds": now.seconds,
                "pending": now.pending,
                "source": now.source,
                "limit_seconds": lag.LIMIT_SECONDS,
            }
            body["ingest_lag"] = OK if now.seconds <= lag.LIMIT_SECONDS else f"behind: {now.seconds:.1f} s"
        except Exception as exc:
            body["ingest_lag"] = f"unknown: {_down(exc)}"
    else:
        body["ingest_lag"] = "unknown: " + ("Postgres" if body["postgres"] != OK else "Redis") + " is down"
    if "," in settings.DATABASES["default"]["HOST"]:  # high availability (docs/operations.md)
        if body["postgres"] == OK:
            body["synchronous_standby"], details["synchronous_standby"] = _standby()
        else:
            body["synchronous_standby"] = "unknown: Postgres is down"
    supervised = _processes()
    if supervised is not None:  # under `make run`: a process down is named while it is restarted
        body["processes"], details["processes"] = supervised
    replica = replica_status()
    if replica is not None:  # lagging reads go to the primary meanwhile: degraded, still serving
        body["replica"] = replica.pop("state")
        details["replica"] = replica
    serving = body["postgres"] == OK and body["redis"] == OK
    body["status"] = OK if all(v == OK for v in body.values()) else "degraded"
    body["details"] = details
    return JsonResponse(body, status=200 if serving else 503)
