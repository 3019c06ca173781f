"""At least once through a real crash (docs/competitions.md, "Delivery"): a real Celery worker on
the webhooks queue delivers to a real receiver on loopback that hangs on the first request; the
worker is killed with SIGKILL mid-request (the delivery is leased, no attempt recorded), then
started again. Once the lease ends every event arrives, in order per board window, each signed,
and a receiver that de-duplicates by X-Event-Id sees each exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from competitions.models import WebhookDelivery, WebhookEvent
from competitions.tasks import deliver_webhooks
from scores.models import Board, Game
from scores.selectors import cached_board, config_cache_clear
from seasons.services import window_freeze
from tests.competitions.test_webhooks import WINDOW, Receiver, _verify
from tests.conftest import SignedClient

pytestmark = pytest.mark.usefixtures("real_projector")

DEADLINE = 60.0
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hanging(settings) -> Iterator[Receiver]:
    # the first request hangs far past any wait of this test: the worker is killed inside it
    r = Receiver(["hang"], hang_seconds=120.0)
    yield r
    r.close()


def _worker() -> subprocess.Popen[bytes]:
    db = connection.settings_dict
    env = {
        **os.environ,  # the test run's SERVER_KEY_PEPPER: the worker signs with the same secret
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        # the attempt's deadline, far longer than the kill takes (the kill ends the request); the
        # lease lasts this plus LEASE_MARGIN_SECONDS
        "WEBHOOK_TIMEOUT_SECONDS": "5",
        "WEBHOOK_ALLOW_PRIVATE": "1",  # the receiver is on loopback
    }
    # the webhooks queue as `make run`'s webhooks worker serves it; one process (solo), so the
    # SIGKILL ends the request with the worker
    cmd = [sys.executable, "-m", "celery", "-A", "leaderboard_project", "worker", "-P", "solo", "-Q", "webhooks"]
    cmd += ["-n", f"webhooks-kill-{os.getpid()}@%h", "--loglevel", "WARNING"]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _until(condition, what: str, worker: subprocess.Popen[bytes] | None = None, poll: float = 0.05) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if worker is not None and worker.poll() is not None:
            raise AssertionError(f"the worker exited: {worker.stderr.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, f"{what} within {DEADLINE:.0f} s"
        time.sleep(poll)  # polling another process's progress, with a deadline


def test_sigkill_of_the_worker_mid_delivery_loses_no_event(
    day: SignedClient, game, hanging: Receiver, server: SignedClient, capsys
) -> None:
    Game.objects.filter(pk=game.pk).update(
        webhooks=[{"url": hanging.url, "events": ["window.frozen", "window.refrozen"]}]
    )
    Board.objects.filter(game=game, slug="rating").update(rewards=[{"ranks": [1, 3], "reward": "gold"}])
    config_cache_clear()
    capsys.readouterr()
    call_command("create_webhook_secret", "chess")
    secret = json.loads(capsys.readouterr().out)["secret"]

    # a freeze and a void's re-freeze of the same board window: two events, in that order
    window_freeze(board=cached_board("chess", board_slug="rating"), window=WINDOW, reason="window closed")
    assert server.post("/api/v1/games/chess/matches/d2/void", {"reason": "cheat"}).status_code == 200
    first, second = WebhookEvent.objects.order_by("version")
    assert (first.type, second.type) == ("window.frozen", "window.refrozen")

    worker = _worker()
    try:
        deliver_webhooks.delay()
        _until(lambda: len(hanging.received) == 1, "the worker never reached the receiver", worker)
        os.kill(worker.pid, signal.SIGKILL)  # mid-request: the receiver has not answered
        worker.wait(timeout=10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=10)
    # the attempt died with the worker: nothing recorded, both still pending, the first leased
    # (not due until its lease ends), the second waiting behind it
    rows = list(WebhookDelivery.objects.order_by("id").values_list("state", "attempts", "claim"))
    assert [(state, attempts) for state, attempts, _ in rows] == [("pending", 0), ("pending", 0)]
    assert rows[0][2] is not None and rows[1][2] is None

    worker = _worker()
    try:
        # beat's part: a run every second (beat's is 5 s) until the lease has ended and both arrived
        def delivered() -> bool:
            deliver_webhooks.delay()
            return WebhookDelivery.objects.filter(state="delivered").count() == 2

        _until(delivered, "the restarted worker did not deliver both events", worker, poll=1.0)
    finally:
        worker.terminate()
        worker.wait(timeout=30)

    ids = [h["X-Event-Id"] for h, _, _ in hanging.received]
    assert ids == [str(first.id), str(first.id), str(second.id)]  # the killed attempt, its retry, then the next
    assert list(dict.fromkeys(ids)) == [str(first.id), str(second.id)]  # de-duplicated: each once, in order
    assert all(_verify(secret, h, body) for h, body, _ in hanging.received)
    assert [b for _, b, _ in hanging.received] == [first.body.encode(), first.body.encode(), second.body.encode()]
