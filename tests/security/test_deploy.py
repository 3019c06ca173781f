"""DEPLOY_HTTPS=1 (docs/operations.md, "Production settings"): `manage.py check --deploy` is clean
behind a TLS-terminating proxy, and the answers carry what the check asks for."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest
from django.test import Client

from tests.pages.conftest import BOARD


def _check_deploy(**extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if k != "DEPLOY_HTTPS"},
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings",
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "SERVER_KEY_PEPPER": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "leaderboard.example.com",
        **extra,
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_check_deploy_is_clean_with_deploy_https_and_warns_without_it() -> None:
    clean = _check_deploy(DEPLOY_HTTPS="1")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "no issues" in clean.stdout + clean.stderr
    plain = _check_deploy()
    assert plain.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W010", "security.W016"):  # HSTS, redirect, cookies
        assert warning in plain.stdout + plain.stderr


@pytest.fixture
def deployed(settings) -> None:
    """The settings DEPLOY_HTTPS=1 sets (leaderboard_project/settings.py), in this process."""
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = settings.SECURE_HSTS_PRELOAD = True


def test_behind_the_tls_proxy_plain_http_is_redirected_and_https_answers_with_hsts_and_secure_cookies(
    deployed, game
) -> None:
    client = Client()
    plain = client.get(BOARD)
    assert plain.status_code == 301 and plain["Location"].startswith("https://")
    assert client.get("/healthz", HTTP_X_FORWARDED_PROTO="http").status_code == 200  # probes stay plain
    page = client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https")
    assert page.status_code == 200
    assert page["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert page.cookies["csrftoken"]["secure"]
