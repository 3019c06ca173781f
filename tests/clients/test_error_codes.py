"""Every error code the service can answer has its exception in both clients (clients/python,
clients/js; docs/clients.md): a code added to the service without its class fails here."""

from __future__ import annotations

import re
from pathlib import Path

import leaderboard_client
from django.conf import settings

from leaderboard_project.errors import _DRF_CODES

ROOT = Path(settings.BASE_DIR)
SERVICE = ("leaderboard_project", "scores", "boards", "seasons", "anticheat", "monitoring", "rediskit")
# a sign-in form's validation code (leaderboard_project/security.py), never in an API error body
NOT_API = {"throttled"}


def service_codes() -> set[str]:
    codes = set(_DRF_CODES.values())
    for folder in SERVICE:
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            codes |= set(re.findall(r'\bcode\s*=\s*"([a-z_]+)"', text))
            codes |= set(re.findall(r'error_(?:response|body)\(\s*"([a-z_]+)"', text))
    return codes - NOT_API


def test_the_scan_finds_the_codes_it_should() -> None:
    codes = service_codes()
    assert {"invalid_body", "match_conflict", "unknown_player", "not_frozen", "database_unavailable"} <= codes


def test_the_python_client_has_a_class_for_every_code() -> None:
    assert sorted(service_codes() - set(leaderboard_client.ERROR_CODES)) == []


def test_the_js_client_has_a_class_for_every_code() -> None:
    text = (ROOT / "clients" / "js" / "src" / "errors.ts").read_text(encoding="utf-8")
    js = set(re.findall(r'static override code = "([a-z_]+)"', text))
    assert sorted(service_codes() - js) == []
