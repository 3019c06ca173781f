"""The served service the clients' test suites run against (clients/python/tests/conftest.py,
clients/js/test/env.ts): the web tier `make run` starts (scripts/web.py: nginx, gunicorn,
uvicorn) on the test database and Redis, with the clients' game (clients/python/tests/game.toml)
and a server key, named to the suites by LEADERBOARD_* variables.

Beside it, as `make run` has them: the projector (tests/projector.py, beside every test on a
committed database), which applies each stored submission within docs/api.md §4.4's second
after its 2xx (the suites wait for that through /healthz), and a Celery worker on the test
broker, which runs the trailing edge of live updates the projector queues
(boards.live._trailing_schedule: a change within the interval of the previous update is
published by a boards.tasks.live_flush scheduled with a countdown). Beat, whose once-a-second
flush is only the safety net of that task, does not run. The rest is the path a game server
uses."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from leaderboard_project.celery import app as celery_app
from scores.models import Game
from tests.e2e.conftest import WebServer, _web
from tests.factories import server_key
from tests.polling import until
from tests.projector import REPO, process_env, processes_stop

PYTHON_PACKAGE = Path(settings.BASE_DIR) / "clients" / "python"
JS_PACKAGE = Path(settings.BASE_DIR) / "clients" / "js"
WORKER_READY_SECONDS = 60.0  # a cold start on a busy 2-core machine; ready took ~4 s here


@pytest.fixture
def served(transactional_db, settings) -> Iterator[dict[str, str]]:
    call_command("apply_game_config", str(PYTHON_PACKAGE / "tests" / "game.toml"), stdout=io.StringIO())
    key, secret = server_key(Game.objects.get(slug="clients"), scopes=("submit", "moderate"))
    web: WebServer
    for web in _web("leaderboard_project.settings_test"):
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env.update(
            LEADERBOARD_URL=web.url,
            LEADERBOARD_GAME="clients",
            LEADERBOARD_KEY_ID=key.key_id,
            LEADERBOARD_SECRET=secret,
        )
        with _celery_worker(settings):
            yield env


@contextlib.contextmanager
def _celery_worker(settings) -> Iterator[subprocess.Popen]:
    """`celery -A leaderboard_project worker` as scripts/run.py starts it, on the test database
    and the test Redis (its broker too: the projector beside the test queues there), answering
    before the suite starts: a live_flush queued with a countdown expires 5 s after it is due,
    so one queued while no worker listens would be lost. One process (`--pool solo`): its tasks
    here are short, and the machine is shared."""
    env = process_env(settings, "leaderboard-celery-under-test")
    name = f"clients-tests-{os.getpid()}@localhost"  # its own: the readiness ping asks it alone
    with tempfile.NamedTemporaryFile(prefix="leaderboard-clients-worker-", suffix=".log", delete=False) as log:
        log_path = Path(log.name)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "leaderboard_project", "worker", "--pool", "solo",
             "--hostname", name, "--loglevel", "WARNING"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:

        def answers() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"the Celery worker exited with {proc.returncode}:\n{_tail(log_path)}")
            return bool(celery_app.control.ping(destination=[name], timeout=0.5))

        until(answers, "the Celery worker answering a ping", timeout=WORKER_READY_SECONDS, every=0.1)
        yield proc
        assert proc.poll() is None, f"the Celery worker exited with {proc.returncode}:\n{_tail(log_path)}"
    finally:
        processes_stop([proc])
        log_path.unlink(missing_ok=True)


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-30:])
    return ""
