"""The projector as a real process, for the tests of scores/ that need one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APP_NAME = "leaderboard-projector-under-test"


@pytest.fixture
def projector_process(transactional_db, settings) -> Iterator[Callable[..., subprocess.Popen]]:
    """Starts `manage.py projector [args]` against the test database and Redis (PGAPPNAME names
    its connections, so the test can see them in pg_stat_activity)."""
    settings.PROJECTOR_INLINE = False
    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test",
        "PROJECTOR_INLINE": "0",
        "PGAPPNAME": APP_NAME,
        "SECRET_KEY": settings.SECRET_KEY,
        "SERVER_KEY_PEPPER": settings.SERVER_KEY_PEPPER,
    }
    started: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "projector", "--idle-seconds", "0.2", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
