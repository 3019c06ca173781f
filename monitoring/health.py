"""GET /healthz (contract sections 11 and 12)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.http import HttpRequest, JsonResponse

from boards.redis import get_redis
from monitoring import heartbeats, lag

OK = "ok"


def _down(exc: BaseException) -> str:
    return f"down: {exc.__class__.__name__}"


def healthz(request: HttpRequest) -> JsonResponse:
    """{"postgres", "redis", "worker", "beat", "ingest_lag", "board_index": "ok" or what is wrong,
    "status": "ok" | "degraded", "details": {...}}. 503 when Postgres or Redis is down (the web
    tier cannot serve); 200 otherwise, with "status": "degraded" when the worker, beat, the lag
    or the index is not ok: results are then still accepted and stored, but reach the boards late."""
    body: dict[str, Any] = {"postgres": OK, "redis": OK}
    details: dict[str, Any] = {}
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
    except Exception as exc:  # any failure means "down" to an operator
        body["postgres"] = _down(exc)
    try:
        get_redis().ping()
    except Exception as exc:
        body["redis"] = _down(exc)
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
    serving = body["postgres"] == OK and body["redis"] == OK
    body["status"] = OK if all(v == OK for v in body.values()) else "degraded"
    body["details"] = details
    return JsonResponse(body, status=200 if serving else 503)
