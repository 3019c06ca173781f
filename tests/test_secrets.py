"""Secrets (docs/reliability.md): no published default serves a deployment. With DEBUG off the
settings refuse to load without two distinct, private secrets; `make run` and `make manage`
take them from the install's own file, random and readable by its owner only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import services

REPO_ROOT = Path(__file__).resolve().parent.parent
GOOD_KEY, GOOD_PEPPER = "k" * 20 + "-random-enough-1234", "p" * 20 + "-random-enough-5678"


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "SERVER_KEY_PEPPER", "DEBUG")}
    code = "import leaderboard_project.settings as s; print(len(s.SECRET_KEY), s.SECRET_KEY != s.SERVER_KEY_PEPPER)"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "env, why",
    [
        ({}, "SECRET_KEY is not set"),
        ({"SECRET_KEY": GOOD_KEY}, "SERVER_KEY_PEPPER is not set"),
        ({"SECRET_KEY": "dev-only-insecure-secret-key-change-me", "SERVER_KEY_PEPPER": GOOD_PEPPER}, "published"),
        ({"SECRET_KEY": GOOD_KEY, "SERVER_KEY_PEPPER": GOOD_KEY}, "the same value"),
        ({"SECRET_KEY": "short", "SERVER_KEY_PEPPER": GOOD_PEPPER}, "shorter than"),
    ],
)
def test_with_debug_off_the_service_refuses_to_start_on_a_known_or_missing_secret(env: dict, why: str) -> None:
    done = load_settings(DEBUG="0", **env)
    assert done.returncode != 0
    assert "refusing to start with DEBUG off" in done.stderr and why in done.stderr


def test_two_distinct_private_secrets_start_it() -> None:
    done = load_settings(DEBUG="0", SECRET_KEY=GOOD_KEY, SERVER_KEY_PEPPER=GOOD_PEPPER)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(GOOD_KEY)), "True"]


def test_debug_on_starts_with_throwaway_defaults_and_says_so() -> None:
    done = load_settings(DEBUG="1")
    assert done.returncode == 0, done.stderr
    assert "insecure secrets" in done.stderr and done.stdout.split()[1] == "True"


def test_an_install_gets_its_own_random_secrets_in_an_owner_only_file(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(services, "LOCAL_DIR", tmp_path)
    monkeypatch.setattr(services, "SECRETS_FILE", tmp_path / "secrets.env")
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("SERVER_KEY_PEPPER", raising=False)
    first = services.ensure_secrets()
    assert set(first) == {"SECRET_KEY", "SERVER_KEY_PEPPER"}
    assert first["SECRET_KEY"] != first["SERVER_KEY_PEPPER"] and min(len(v) for v in first.values()) >= 32
    mode = stat.S_IMODE((tmp_path / "secrets.env").stat().st_mode)
    assert mode == 0o600
    assert services.ensure_secrets() == first  # a restart keeps them: issued server keys stay valid
    (tmp_path / "secrets.env").unlink()
    assert services.ensure_secrets() != first  # another install, other secrets
    monkeypatch.setenv("SECRET_KEY", GOOD_KEY)
    monkeypatch.setenv("SERVER_KEY_PEPPER", GOOD_PEPPER)
    assert services.ensure_secrets() == {"SECRET_KEY": GOOD_KEY, "SERVER_KEY_PEPPER": GOOD_PEPPER}


def test_the_secrets_file_is_not_tracked_by_git() -> None:
    done = subprocess.run(
        ["git", "check-ignore", "-q", ".local/secrets.env"], cwd=REPO_ROOT, capture_output=True, timeout=30
    )
    assert done.returncode == 0
