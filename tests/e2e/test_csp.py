"""The Content-Security-Policy in a real browser (leaderboard_project/security.py): a script
injected into a page does not run, and the console says the policy blocked it (every other
browser test checks, as it quits, that the policy blocked nothing the pages need)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import csp_violations

pytestmark = pytest.mark.slow


def test_an_injected_inline_script_is_blocked_on_a_board_page(web, browser, server) -> None:
    browser.get(web.url + "/games/chess/boards/rating/")
    ran = browser.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
        "document.body.appendChild(s); return window.injected === 1;"
    )
    assert ran is False
    assert any("script-src" in message for message in csp_violations(browser))
