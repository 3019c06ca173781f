"""The after-the-fact checks lose nothing (docs/moderation.md, "After the fact: a backlog that
loses nothing"): through a SIGKILL of the worker in the middle of a drain, and through Redis (the
wake-up and the broker) being down when the projector applies the matches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from anticheat.models import AuditEntry, CheckBacklog
from anticheat.tasks import check_pending
from boards.services import board_index_heal
from boards.tasks import sync_pending
from scores.models import Match
from tests.anticheat.conftest import URL, submit, top
from tests.boards.test_redis_down import ThrowawayRedis, throwaway_redis  # noqa: F401  (a fixture)
from tests.conftest import SignedClient
from tests.polling import until
from tests.projector import applied, database_url, process_env, projected

pytestmark = pytest.mark.usefixtures("real_projector", "async_checks")

DEADLINE = 60.0
ROOT = Path(__file__).resolve().parents[2]


def _worker() -> subprocess.Popen[bytes]:
    env = {
        **process_env(settings, "anticheat-backlog-worker"),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "ANTICHEAT_ASYNC_CHECKS": "1",
    }
    # the default queue as `make run`'s worker serves it; one process (solo): the SIGKILL ends the drain
    cmd = [sys.executable, "-m", "celery", "-A", "leaderboard_project", "worker", "-P", "solo", "-Q", "celery"]
    cmd += ["-n", f"checks-kill-{os.getpid()}@%h", "--loglevel", "WARNING"]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _running(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is not None:
        raise AssertionError(f"the worker exited: {worker.stderr.read().decode()[-2000:]}")


def _backends_waiting_on_a_lock(conn: psycopg.Connection) -> list[int]:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        " AND pid <> pg_backend_pid()"
    ).fetchall()
    return [pid for (pid,) in rows]


def test_sigkill_of_the_worker_mid_drain_checks_every_match_once(gs: SignedClient) -> None:
    """A real Celery worker takes a chunk of the backlog and is killed with SIGKILL in the middle
    of it, while its hold waits on a row this test locks. The chunk comes back when the killed
    worker's transaction ends, and the next drain checks every match of it once: the outlier
    held once, one audit entry, the backlog empty."""
    for i, score in enumerate([163, 180, 181, 182, 183]):
        submit(gs, f"g{i}", [{"player": "a", "board": "golf", "score": score}], at=f"2026-11-28T1{i}:00:00Z")
    submit(gs, "g9", [{"player": "a", "board": "golf", "score": 18}], at="2026-11-28T19:00:00Z")  # the outlier
    assert CheckBacklog.objects.count() == 6  # and the projector queued a drain on the broker

    with (
        psycopg.connect(database_url(settings), autocommit=True) as watcher,
        psycopg.connect(database_url(settings)) as locker,
    ):
        # the hold of g9 will wait on this row lock, with the drain's chunk claimed
        locker.execute("SELECT 1 FROM scores_match WHERE match_id = 'g9' FOR UPDATE")
        worker = _worker()
        try:
            (victim, *_) = until(
                lambda: _running(worker) or _backends_waiting_on_a_lock(watcher),
                "the drain reaching the hold",
                timeout=DEADLINE,
                every=0.05,
            )
            # the chunk is claimed by the worker's open transaction: another drain skips all of it
            claimable = "SELECT count(*) FROM (SELECT 1 FROM anticheat_checkbacklog FOR UPDATE SKIP LOCKED) c"
            assert watcher.execute(claimable).fetchone() == (0,)
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=10)
        locker.rollback()  # the killed worker's backend goes on, finds its client gone, rolls back
        until(
            lambda: not watcher.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [victim]).fetchone(),
            "the killed worker's transaction ending",
            timeout=DEADLINE,
            every=0.05,
        )

    assert CheckBacklog.objects.count() == 6  # the chunk is back
    assert Match.objects.get(match_id="g9").status == "accepted"
    assert check_pending() == 1  # the next drain (a restarted worker, or beat's sweep)
    assert Match.objects.get(match_id="g9").status == "held"
    assert CheckBacklog.objects.count() == 0
    assert AuditEntry.objects.filter(action="hold", match_ref="g9").count() == 1
    assert top("golf") == [("a", 163)]
    assert check_pending() == 0  # nothing checked twice


def test_matches_applied_while_redis_is_down_are_checked_once_it_is_back(
    gs: SignedClient,
    throwaway_redis: ThrowawayRedis,  # noqa: F811  (the fixture imported above)
) -> None:
    for i, score in enumerate([163, 180, 181, 182, 183]):
        submit(gs, f"g{i}", [{"player": "a", "board": "golf", "score": score}], at=f"2026-11-28T1{i}:00:00Z")
    assert check_pending() == 0  # the history, checked: nothing to hold

    throwaway_redis.stop()
    redis_down = gs.at_the_answer()  # nothing reaches Redis now: no drain can be woken
    body = {
        "match_id": "g9",
        "ended_at": "2026-11-28T19:00:00Z",
        "results": [{"player": "a", "board": "golf", "score": 18}],
    }
    assert redis_down.post(f"{URL}/matches", body).status_code == 201
    applied("the outlier applied to Postgres while Redis is down")
    assert list(CheckBacklog.objects.values_list("match__match_id", flat=True)) == ["g9"]

    throwaway_redis.start()
    # beat's sweep queues the drain every 30 s whatever the wake-ups did
    assert settings.CELERY_BEAT_SCHEDULE["anticheat-check-pending"]["task"] == check_pending.name
    assert check_pending() == 1
    assert Match.objects.get(match_id="g9").status == "held"
    assert CheckBacklog.objects.count() == 0
    # and beat's board sync (every 2 s) mirrors to the boards what Redis missed while it was
    # down, as in production: nothing acknowledged is left on its way (tests/projector.py). Its
    # grace period (BOARD_SYNC_GRACE_SECONDS) is for writes still on their way: none here
    assert settings.CELERY_BEAT_SCHEDULE["boards-sync-pending"]["task"] == sync_pending.name
    board_index_heal(grace_seconds=0)  # what sync_pending runs once the grace has passed
    projected("what Redis missed while it was down, on the boards")
    assert top("golf") == [("a", 163)]  # the held outlier is not on them
