"""A moderator in a real browser against the running web tier (docs/moderation.md): signs in to
the admin, finds a top player's matches, previews a void (every player of the match, each
board window before and after), confirms it, sees the public board rewritten, the audit entry
with its target, and the corrected frozen window's diff; the API docs render with no internet.
Screenshots of each step land in tests/e2e/screenshots/moderation-*.png."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from anticheat.services import moderator_grant
from scores.models import Match
from scores.selectors import cached_board
from seasons.models import WindowFreeze
from seasons.services import window_freeze
from tests.anticheat.conftest import moderators_group_create
from tests.conftest import SignedClient
from tests.e2e.conftest import screenshot

DEADLINE = 15.0
pytestmark = pytest.mark.slow


def _wait(driver, condition, what: str):  # noqa: ANN001, ANN202
    # A page that reloads (a submitted search) can replace an element between finding it and
    # reading it: that is "not yet", not a failure.
    wait = WebDriverWait(driver, DEADLINE, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(lambda d: condition(d), message=what)


def _top_players(driver) -> list[str]:  # noqa: ANN001
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#top-body tr[data-player]'), tr => tr.dataset.player)"
    )


@pytest.fixture
def played(server: SignedClient) -> Match:
    """Yesterday's daily window, frozen: ana (#1) won m-top against bo and cy; dee played alone."""
    ended = (timezone.now() - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    at = ended.isoformat().replace("+00:00", "Z")
    results = [("ana", 9000, "Ana"), ("bo", 8000, "Bo"), ("cy", 7000, "Cy")]
    body = {"match_id": "m-top", "ended_at": at, "results": [
        {"player": p, "board": "rating", "score": s, "display_name": n} for p, s, n in results]}  # fmt: skip
    assert server.post("/api/v1/games/chess/matches", body).status_code == 201
    solo = {"match_id": "m-dee", "ended_at": at, "results": [{"player": "dee", "board": "rating", "score": 7500}]}
    assert server.post("/api/v1/games/chess/matches", solo).status_code == 201
    window_freeze(
        board=cached_board("chess", board_slug="rating"), window=f"daily:{ended.date()}", reason="window closed"
    )
    return Match.objects.get(match_id="m-top")


@pytest.fixture
def moderator_login(game) -> tuple[str, str]:
    """A moderator of chess (docs/moderation.md, "Moderators per game")."""
    moderators_group_create()
    moderator_grant(username="moderator", games=["chess"], password="pw-e2e-mod")
    return "moderator", "pw-e2e-mod"


def test_a_moderator_previews_and_voids_a_top_players_match(web, browser, played, moderator_login) -> None:
    browser.get(f"{web.url}/games/chess/boards/rating/")
    assert _top_players(browser)[:2] == ["ana", "bo"]

    browser.get(f"{web.url}/admin/login/?next=/admin/scores/match/")
    browser.find_element(By.ID, "id_username").send_keys(moderator_login[0])
    browser.find_element(By.ID, "id_password").send_keys(moderator_login[1])
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "changelist-search"), "the match list never opened")

    search = browser.find_element(By.ID, "searchbar")
    search.send_keys("ana")
    search.submit()
    _wait(browser, lambda d: "m-top" in d.find_element(By.ID, "result_list").text, "ana's match not found")
    assert "m-dee" not in browser.find_element(By.ID, "result_list").text
    screenshot(browser, "moderation-1-search")

    browser.find_element(By.CSS_SELECTOR, "#result_list input.action-select").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("void")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "void-preview"), "no preview")
    players = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#preview-players tbody td:first-child")]
    assert players == ["ana", "bo", "cy"]  # the opponents too
    all_time = browser.find_element(By.CSS_SELECTOR, "table.preview-window[data-window=all]")
    row = {tr.get_attribute("data-player"): tr.text for tr in all_time.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert "#1 of 4" in row["ana"] and "removed" in row["ana"] and "off the board" in row["ana"]
    assert "#2 of 4" in row["bo"] and "removed" in row["bo"]
    refrozen = browser.find_element(By.ID, "preview-refreezes").text
    assert "v2" in refrozen
    assert Match.objects.get(pk=played.pk).status == "accepted"  # a preview changes nothing
    screenshot(browser, "moderation-2-preview")

    browser.find_element(By.ID, "id_reason").send_keys("aimbot, confirmed by replay")
    browser.find_element(By.ID, "confirm-void").click()
    _wait(browser, lambda d: "Voided 1 match" in d.find_element(By.CSS_SELECTOR, "ul.messagelist").text, "no confirm")
    assert Match.objects.get(pk=played.pk).status == "voided"
    screenshot(browser, "moderation-3-voided")

    def rewritten(d) -> bool:  # noqa: ANN001
        d.get(f"{web.url}/games/chess/boards/rating/")
        return _top_players(d) == ["dee"]

    _wait(browser, rewritten, "the public board still shows the voided match")
    screenshot(browser, "moderation-4-board-rewritten")

    browser.get(f"{web.url}/admin/anticheat/auditentry/")
    table = browser.find_element(By.ID, "result_list")
    void_row = next(tr for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr") if "aimbot" in tr.text)
    assert void_row.find_element(By.CSS_SELECTOR, "td.field-target_match a").text == "m-top"
    width = browser.execute_script(
        "const r = document.querySelector('#changelist .results');"
        "return [document.documentElement.scrollWidth, window.innerWidth, r.scrollWidth, r.clientWidth]"
    )
    assert width[0] <= width[1] and width[2] <= width[3], f"the audit log overflows sideways: {width}"
    screenshot(browser, "moderation-5-audit-log")

    void_row.find_element(By.CSS_SELECTOR, "td.field-target_windows a").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "freeze-moves"), "no diff on the re-frozen window")
    page = browser.find_element(By.ID, "content").text
    assert "aimbot, confirmed by replay" in page and "voided by user moderator" in page
    moves = {
        tr.get_attribute("data-player"): tr.text
        for tr in browser.find_elements(By.CSS_SELECTOR, "#freeze-moves tr[data-player]")
    }
    assert "removed" in moves["ana"] and "▲ 2" in moves["dee"]  # dee: from #3 to #1
    assert WindowFreeze.objects.filter(version=2).count() == 1
    screenshot(browser, "moderation-6-refrozen-diff")


@pytest.mark.parametrize("page,ready", [("/api/docs/", ".swagger-ui .info .title"), ("/api/redoc/", "h1")])
def test_the_api_docs_render_without_internet(web, offline_browser, page: str, ready: str) -> None:
    offline_browser.get(web.url + page)
    title = _wait(offline_browser, lambda d: d.find_elements(By.CSS_SELECTOR, ready), f"{page} never rendered")
    assert "Leaderboard service API" in title[0].text
    _wait(
        offline_browser,
        lambda d: "/api/v1/games/{game}/matches" in d.find_element(By.TAG_NAME, "body").text,
        f"{page} shows no endpoints",
    )
    screenshot(offline_browser, "api-docs" if "docs" in page else "api-redoc")
