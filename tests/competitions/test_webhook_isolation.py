"""A receiver that never answers holds nobody else's work (docs/operations.md, "Celery queues and
time limits"; docs/api.md §13): the two Celery workers `make run` starts (scripts/run.py
`celery_workers`: the default queue's, and the webhooks queue's own), on the test database and
broker. While the receivers of games A and C hold their attempts (two receivers that never
answer: as many as the default queue has processes), a window close on the default queue freezes
game B's board, B's event reaches B's receiver, the anti-cheat checks drain their backlog and the board upkeep
syncs the outbox."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from anticheat.models import CheckBacklog
from anticheat.tasks import check_pending
from boards.tasks import sync_pending
from competitions.models import WebhookDelivery
from competitions.tasks import deliver_webhooks
from competitions.webhooks import webhook_secret_create
from leaderboard_project.celery import app as celery_app
from scores.models import BoardOutbox, Game, Match
from scores.selectors import config_cache_clear
from scripts.run import celery_workers
from seasons.models import WindowFreeze
from seasons.tasks import close_windows
from tests.competitions.test_webhook_receivers import RawReceiver, _freeze, _hooked_game, answer, stall
from tests.polling import until
from tests.projector import process_env, processes_stop
from tests.seasons.conftest import AFTER_GRACE, DAY

pytestmark = pytest.mark.usefixtures("real_projector")  # B's results reach its values as users' do

ROOT = Path(__file__).resolve().parents[2]
READY_SECONDS = 60.0  # a cold start of two workers on a busy 2-core machine
HELD_SECONDS = 10.0  # the attempts' deadline in the workers (the default, WEBHOOK_TIMEOUT_SECONDS)


@pytest.fixture
def workers() -> Iterator[None]:
    """The default queue's worker and the webhooks queue's, with `make run`'s arguments (each
    under a name of this run's, which the readiness ping asks)."""
    env = {
        **process_env(django_settings, "leaderboard-webhook-isolation"),
        "CELERY_BROKER_URL": django_settings.CELERY_BROKER_URL,
        "WEBHOOK_ALLOW_PRIVATE": "1",  # the receivers are on loopback
        "WEBHOOK_TIMEOUT_SECONDS": str(HELD_SECONDS),
    }
    names, procs = [], []
    try:
        for process, args in celery_workers("WARNING").items():
            names.append(f"{process}-{os.getpid()}@localhost")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "celery", *args.split(), "-n", names[-1]],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        until(
            lambda: len(celery_app.control.ping(destination=names, timeout=0.5)) == len(names),
            "both Celery workers answering a ping",
            timeout=READY_SECONDS,
        )
        yield
        assert all(p.poll() is None for p in procs), "a Celery worker exited"
    finally:
        processes_stop(procs)


def test_a_stuck_receiver_holds_neither_another_games_freeze_nor_its_delivery(day, game, workers, settings) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    stuck = [RawReceiver(stall), RawReceiver(stall)]
    quick = RawReceiver(answer(200))
    try:
        # games A and C: an event each for a receiver that accepts and never answers
        for slug, receiver in zip(("arena", "citadel"), stuck, strict=True):
            _hooked_game(slug, [receiver.url])
            _freeze(slug)
        # game B: the day fixture's chess game, its events to a receiver that answers at once
        Game.objects.filter(pk=game.pk).update(webhooks=[{"url": quick.url, "events": ["window.frozen"]}])
        config_cache_clear()
        webhook_secret_create(game=game)

        deliver_webhooks.delay()
        deliver_webhooks.delay()
        for receiver in stuck:
            assert receiver.arrived.wait(READY_SECONDS), "a stuck game's attempt never reached its receiver"
        # both receivers now hold their attempts for up to HELD_SECONDS: the default queue's
        # close runs meanwhile, and B's event goes out beside the stuck attempts
        close_windows.delay(now=AFTER_GRACE.isoformat())
        until(
            lambda: WindowFreeze.objects.filter(board__game=game, board__slug="rating", window=f"daily:{DAY}").exists(),
            "game B's window frozen",
            timeout=HELD_SECONDS / 2,
        )
        until(lambda: quick.requests, "game B's event at its receiver", timeout=HELD_SECONDS / 2)
        # and the anti-cheat checks go on on the default queue: a match in their backlog is checked
        CheckBacklog.objects.create(match=Match.objects.filter(game=game).earliest("pk"))
        check_pending.delay()
        until(lambda: not CheckBacklog.objects.exists(), "the anti-cheat backlog drained", timeout=HELD_SECONDS / 2)
        # and the board upkeep: an outbox row past its grace is cleared by the periodic sync
        row = BoardOutbox.objects.create(entries=[])
        BoardOutbox.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=1))
        sync_pending.delay()
        until(lambda: not BoardOutbox.objects.filter(pk=row.pk).exists(), "the outbox synced", timeout=HELD_SECONDS / 2)
        for held in WebhookDelivery.objects.filter(event__game__slug__in=["arena", "citadel"]):
            assert held.attempts == 0 and held.claim is not None  # still the attempts in flight
        assert b"X-Event-Type: window.frozen" in quick.requests[0]
    finally:
        for receiver in stuck:  # ends their attempts: the workers stop without waiting out the deadline
            receiver.close()
        quick.close()
