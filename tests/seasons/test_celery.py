"""The close job through a real Celery worker and the Redis broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from seasons.models import WindowFreeze
from seasons.tasks import close_windows
from tests.seasons.conftest import AFTER_GRACE, DAY

pytestmark = pytest.mark.usefixtures("real_projector")


def test_a_real_worker_runs_the_close_job(day) -> None:
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    }
    root = Path(__file__).resolve().parents[2]
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "leaderboard_project", "worker", "-P", "solo", "--loglevel", "WARNING"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        close_windows.delay(now=AFTER_GRACE.isoformat())
        deadline = time.monotonic() + 60
        # Waiting for an event with a deadline, not sleeping for a guessed duration.
        while not WindowFreeze.objects.filter(board__slug="rating", window=f"daily:{DAY}").exists():
            assert worker.poll() is None, worker.stderr.read().decode()
            assert time.monotonic() < deadline, "the worker did not freeze the window within 60 s"
            time.sleep(0.05)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    freeze = WindowFreeze.objects.get(board__slug="rating", window=f"daily:{DAY}")
    assert freeze.entries == 10 and freeze.version == 1
