"""/healthz (docs/api.md §11): Postgres, Redis, the Celery worker and beat (their
heartbeats), the ingest lag and the board index, each with a status."""

from __future__ import annotations

import json
import time
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from monitoring import heartbeats
from rediskit import keys
from rediskit.client import get_redis


def _all_running() -> None:
    heartbeats.worker_beat("celery@test")
    get_redis().set(keys.HEARTBEAT_BEAT, json.dumps({"at": time.time(), "pid": 1}))
    get_redis().set(keys.BUILT_MARKER, timezone.now().isoformat())


def test_healthz_reports_every_component(transactional_db) -> None:
    _all_running()
    response = Client().get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ("postgres", "redis", "worker", "beat", "ingest_lag", "board_index", "status")} == {
        "postgres": "ok",
        "redis": "ok",
        "worker": "ok",
        "beat": "ok",
        "ingest_lag": "ok",
        "board_index": "ok",
        "status": "ok",
    }
    assert list(body["details"]["worker"]["workers"]) == ["celery@test"]
    assert body["details"]["ingest_lag"] == {"seconds": 0.0, "pending": 0, "source": "outbox", "limit_seconds": 10.0}


def test_a_silent_worker_or_beat_is_stale_and_the_service_degraded_not_down(transactional_db) -> None:
    _all_running()
    old = time.time() - heartbeats.STALE_SECONDS - 5
    get_redis().hset(keys.HEARTBEAT_WORKERS, "celery@test", json.dumps({"at": old, "pid": 1}))
    get_redis().delete(keys.HEARTBEAT_BEAT)
    response = Client().get("/healthz")
    body = response.json()
    assert response.status_code == 200  # the web tier still serves: results are stored
    assert body["worker"].startswith("stale: last heartbeat") and body["beat"] == "down: no heartbeat yet"
    assert body["status"] == "degraded"


def test_outbox_rows_the_boards_have_not_seen_are_lag(transactional_db) -> None:
    from scores.models import BoardOutbox

    _all_running()
    applied, waiting = BoardOutbox.objects.create(entries=[]), BoardOutbox.objects.create(entries=[])
    written = timezone.now()
    BoardOutbox.objects.update(created_at=written - timedelta(seconds=25))
    get_redis().sadd(keys.OUTBOX_APPLIED, applied.pk)  # the fast path mirrored this one
    response = Client().get("/healthz")
    read = timezone.now()
    body = response.json()
    lag = body["details"]["ingest_lag"]
    # the age of the one row not applied, measured when the request ran: 25 s and the test's own time
    assert 25.0 <= lag["seconds"] <= 25.0 + (read - written).total_seconds()
    assert lag == {"seconds": lag["seconds"], "pending": 1, "source": "outbox", "limit_seconds": 10.0}
    assert body["ingest_lag"] == f"behind: {lag['seconds']:.1f} s"
    assert response.status_code == 200 and body["status"] == "degraded" and waiting.pk
    # no match stands behind these rows: the projector's wait after the test would not end
    BoardOutbox.objects.filter(pk__in=[applied.pk, waiting.pk]).delete()


def test_a_missing_index_marker_reads_as_rebuilding(transactional_db) -> None:
    _all_running()
    get_redis().delete(keys.BUILT_MARKER)
    body = Client().get("/healthz").json()
    assert body["board_index"].startswith("rebuilding") and body["status"] == "degraded"
