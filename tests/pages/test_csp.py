"""The pages' Content-Security-Policy (leaderboard_project/security.py): only this server's scripts,
inline ones by the request's nonce. tests/e2e/test_csp.py checks that the pages still work in a
real browser under it."""

from __future__ import annotations

import re

from django.test import Client

from tests.pages.conftest import BOARD


def test_pages_carry_a_policy_with_a_fresh_nonce_and_json_carries_none(ranked) -> None:
    client = Client()
    first, second = client.get(BOARD), client.get(BOARD)
    policy = first["Content-Security-Policy"]
    assert (
        "script-src 'self' 'nonce-" in policy and "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
    )
    assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";", 1)[0]
    nonces = {re.search(r"'nonce-([^']+)'", r["Content-Security-Policy"]).group(1) for r in (first, second)}
    assert len(nonces) == 2
    api = client.get("/api/v1/games/chess/boards/rating/top")
    assert api.status_code == 200 and "Content-Security-Policy" not in api


def test_the_swagger_page_marks_its_inline_script_with_the_nonce(db) -> None:
    page = Client().get("/api/docs/")
    nonce = re.search(r"'nonce-([^']+)'", page["Content-Security-Policy"]).group(1)
    inline = re.findall(r"<script( [^>]*)?>\s*\S", page.content.decode())
    assert inline and all(f'nonce="{nonce}"' in (attrs or "") for attrs in inline if "src=" not in (attrs or ""))
