"""Operations against the real processes `make run` starts: /metrics across the web tier's
processes (gunicorn workers and uvicorn, prometheus-client's multiprocess mode), and /healthz
seeing a real Celery worker and beat by their heartbeats."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
import websocket
from django.conf import settings
from django.utils import timezone
from leaderboard_client.signing import sign
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import web_tier  # noqa: F401  (the web tier fixture)
from tests.factories import BoardFactory, GameFactory, migrated_test_database_url, server_key
from tests.polling import until

pytestmark = pytest.mark.slow


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post(url: str, path: str, body: dict, key_id: str, secret: str) -> int:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "X-Key-Id": key_id, "X-Signature": sign(secret, "POST", path, data)}
    request = urllib.request.Request(url + path, data, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def _samples(url: str) -> dict[tuple[str, tuple], float]:
    status, body = _get(url + "/metrics")
    assert status == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def _accepted(samples: dict) -> float:
    return samples.get(("leaderboard_matches_submitted_total", (("game", "ops"), ("status", "accepted"))), 0.0)


def test_metrics_sum_every_web_process_and_count_websockets(web_tier) -> None:  # noqa: F811
    web = web_tier
    game = GameFactory(slug="ops")
    BoardFactory(game=game, slug="rating")
    key, secret = server_key(game)
    ended = (timezone.now() - timedelta(seconds=5)).isoformat()
    before = _accepted(_samples(web.url))
    for i in range(20):  # spread over the gunicorn workers by nginx
        body = {"match_id": f"m{i}", "ended_at": ended, "results": [{"player": f"p{i}", "board": "rating", "score": i}]}
        assert _post(web.url, "/api/v1/games/ops/matches", body, key.key_id, secret) == 201
    # every scrape, whichever worker answers it, sums all of them
    for _ in range(6):
        assert _accepted(_samples(web.url)) - before == 20
    sockets = [
        websocket.create_connection(web.url.replace("http", "ws") + "/ws/games/ops/boards/rating/", timeout=10)
        for _ in range(3)
    ]
    try:
        gauge = ("leaderboard_websockets_open", ())
        until(lambda: _samples(web.url).get(gauge) == 3, "3 open websockets never showed")
    finally:
        for ws in sockets:
            ws.close()
    until(lambda: _samples(web.url).get(gauge) == 0, "closed websockets still counted")


def _celery(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    out = open(log, "ab")  # noqa: SIM115  (closed with the process)
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "celery"), "-A", "leaderboard_project", *args, "--loglevel", "WARNING"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_healthz_sees_a_real_celery_worker_and_beat(web_tier) -> None:  # noqa: F811
    web = web_tier
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test",
        "DATABASE_URL": migrated_test_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "DB_POOL_MAX": "2",
    }
    tmp = Path(tempfile.mkdtemp(prefix="leaderboard-celery-"))
    started = [
        _celery("worker", "--concurrency", "1", "--pool", "solo", env=env, log=tmp / "worker.log"),
        _celery("beat", "--schedule", str(tmp / "schedule"), env=env, log=tmp / "beat.log"),
    ]
    try:

        def both_ok() -> dict | None:
            body = json.loads(_get(web.url + "/healthz")[1])
            return body if body["worker"] == "ok" and body["beat"] == "ok" else None

        body = until(both_ok, "worker and beat never reported (logs in " + str(tmp) + ")")
        assert body["details"]["worker"]["seen_seconds_ago"] < 30 and body["details"]["worker"]["workers"]
        up = _samples(web.url)
        assert up[("leaderboard_component_up", (("component", "worker"),))] == 1
        assert up[("leaderboard_component_up", (("component", "beat"),))] == 1
    finally:
        for proc in started:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in started:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
