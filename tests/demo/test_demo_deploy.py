"""A deployment (DEPLOY_HTTPS=1) never gets the demo game and its 100,000 logins with the password
`demo` (docs/operations.md, "Production settings"): demo_load, demo_traffic and `make run`
(scripts/run.py) refuse with a clear error and write nothing; without DEPLOY_HTTPS `make run` keeps
the demo (tests/demo/test_demo.py loads it)."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from demo import load as demo_load
from demo.names import DEMO_SLUG
from scores.models import Game, Player

REFUSAL = "DEPLOY_HTTPS=1: refusing to load the demo game"


@pytest.mark.django_db(transaction=True)
def test_demo_load_refuses_under_deploy_https_and_writes_nothing(settings) -> None:
    settings.DEPLOY_HTTPS = True
    users = get_user_model().objects.count()
    with pytest.raises(CommandError, match=REFUSAL):
        call_command("demo_load", players=50, matches=20, no_progress=True, stdout=io.StringIO())
    with pytest.raises(demo_load.DemoRefused, match=REFUSAL):
        demo_load.demo_load(players=50, matches=20, progress=False)
    with pytest.raises(demo_load.DemoRefused, match=REFUSAL):
        demo_load.demo_accounts_heal()
    assert not Game.objects.filter(slug=DEMO_SLUG).exists()
    assert not Player.objects.filter(game__slug=DEMO_SLUG).exists()
    assert get_user_model().objects.count() == users


def _unreachable_database_env(**extra: str) -> dict[str, str]:
    """The test settings with DEPLOY_HTTPS read from the environment, as a deployment sets it, and a
    database nothing listens on: had the refusal failed, nothing could have been written anywhere."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    return {
        **{k: v for k, v in os.environ.items() if k not in ("DEPLOY_HTTPS", "DEMO")},
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed_port}/leaderboard",
        **extra,
    }


@pytest.mark.parametrize("command", ["demo_load", "demo_traffic"])
def test_demo_commands_refuse_when_the_environment_says_deploy_https(command: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", command],
        cwd=settings.BASE_DIR, env=_unreachable_database_env(DEPLOY_HTTPS="1"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert REFUSAL in done.stderr
    assert "DEMO=0" in done.stderr


def test_make_run_refuses_the_demo_under_deploy_https_before_starting_anything() -> None:
    env = _unreachable_database_env(DEPLOY_HTTPS="1", PORT="8000")
    done = subprocess.run(
        [sys.executable, "scripts/run.py"], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refusing to load the demo game" in done.stderr
    assert "run a deployment with DEMO=0" in done.stderr
    # it stopped before the services: nothing was looked up, migrated or started
    assert "leaderboard service:" not in done.stdout + done.stderr
    assert "migrating" not in done.stdout + done.stderr
