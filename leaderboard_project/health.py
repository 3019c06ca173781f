"""GET /healthz (contract section 11): 200 {"postgres": "ok", "redis": "ok"}, or 503 naming
what is down. Always within about a second: both checks run at once, Postgres bounded by the
pool's timeout (DB_POOL_TIMEOUT) and Redis by its socket timeout or its open breaker."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from django.db import connection
from django.http import HttpRequest, JsonResponse

from boards.redis import get_redis


def _redis() -> str:
    try:
        get_redis().ping()
    except Exception as exc:
        return f"down: {exc.__class__.__name__}"
    return "ok"


def healthz(request: HttpRequest) -> JsonResponse:
    with ThreadPoolExecutor(max_workers=1) as pool:
        redis_state = pool.submit(_redis)
        body = {"postgres": _postgres_here(), "redis": redis_state.result()}
    ok = all(v == "ok" for v in body.values())
    return JsonResponse(body, status=200 if ok else 503)


def _postgres_here() -> str:
    """_postgres on the request's own thread, keeping its connection for the rest of it."""
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
    except Exception as exc:
        return f"down: {exc.__class__.__name__}"
    return "ok"
