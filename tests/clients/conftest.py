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

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from scores.models import Game
from tests.e2e.conftest import WebServer, _web, celery_worker
from tests.factories import server_key

PYTHON_PACKAGE = Path(settings.BASE_DIR) / "clients" / "python"
JS_PACKAGE = Path(settings.BASE_DIR) / "clients" / "js"


@pytest.fixture
def served(transactional_db) -> Iterator[dict[str, str]]:
    call_command("apply_game_config", str(PYTHON_PACKAGE / "tests" / "game.toml"), stdout=io.StringIO())
    key, secret = server_key(Game.objects.get(slug="clients"), scopes=("submit", "moderate", "events"))
    web: WebServer
    for web in _web("leaderboard_project.settings_test"):
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env.update(
            LEADERBOARD_URL=web.url,
            LEADERBOARD_GAME="clients",
            LEADERBOARD_KEY_ID=key.key_id,
            LEADERBOARD_SECRET=secret,
        )
        with celery_worker():
            yield env
