"""The served service the clients' test suites run against (clients/python/tests/conftest.py,
clients/js/test/env.ts): the web tier `make run` starts (scripts/web.py: nginx, gunicorn,
uvicorn) on the test database and Redis, with the clients' game (clients/python/tests/game.toml)
and a server key, named to the suites by LEADERBOARD_* variables.

One shortcut, as tests/e2e does: while a suite runs, this process plays Celery beat's part for
live updates (boards.tasks.live_flush: a change within a second of the previous update is
published by that trailing edge). The rest is the path a game server uses."""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from boards.tasks import live_flush
from rediskit.client import REDIS_DOWN
from scores.models import Game
from tests.e2e.conftest import WebServer, _web
from tests.factories import server_key

PYTHON_PACKAGE = Path(settings.BASE_DIR) / "clients" / "python"
JS_PACKAGE = Path(settings.BASE_DIR) / "clients" / "js"


@pytest.fixture
def served(transactional_db) -> Iterator[dict[str, str]]:
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
        with _playing_beat():
            yield env


@contextlib.contextmanager
def _playing_beat() -> Iterator[None]:
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(0.1):
            with contextlib.suppress(*REDIS_DOWN):
                live_flush()

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
