from django.db import connection
from django.http import HttpRequest, JsonResponse

from boards.redis import get_redis


def healthz(request: HttpRequest) -> JsonResponse:
    """200 {"postgres": "ok", "redis": "ok"}, or 503 naming what is down."""
    body = {"postgres": "ok", "redis": "ok"}
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
    except Exception as exc:  # any failure means "down" to an operator
        body["postgres"] = f"down: {exc.__class__.__name__}"
    try:
        get_redis().ping()
    except Exception as exc:
        body["redis"] = f"down: {exc.__class__.__name__}"
    ok = all(v == "ok" for v in body.values())
    return JsonResponse(body, status=200 if ok else 503)
