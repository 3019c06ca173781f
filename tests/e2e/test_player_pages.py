"""The player pages (docs/players.md) in a real browser, each item at desktop size and on a 390x844 phone, with
screenshots in tests/e2e/screenshots/: the demo that shows everything (a friend passes the demo
login within a minute of signing in), a board page's extras, the player page and who may see
it, the season archive, HTML error pages and the favicon, and accessibility (axe-core, the
keyboard, the live announcer)."""

from __future__ import annotations

import io
import json
import random
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from demo.load import demo_players
from demo.names import DEMO_LOGIN, KEY_NAME
from demo.traffic import BoardRule, Rivalry, traffic_loop
from scores.accounts import DEMO_PASSWORD
from scores.formats import score_format
from scores.models import Board, Game, Season
from scores.selectors import cached_board, config_cache_clear
from seasons import services as seasons
from tests.e2e.conftest import axe_violations, screenshot
from tests.e2e.test_browser import _account, _live, _result, _sign_in, _submit, _text, _top_players, _wait, _wait_live
from tests.factories import SeasonFactory, server_key

pytestmark = pytest.mark.slow

BOARD = "/games/chess/boards/rating/"
PASS_DEADLINE = 60.0  # the issue: a friend passes the demo login within a minute of signing in


def _rows(driver) -> list[dict]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#top-body tr[data-player]'), tr => ({"
        "  cells: Array.from(tr.cells, td => td.textContent.trim()), cls: tr.className}))"
    )


def _top_of(driver, element_id: str) -> float:
    return driver.execute_script(
        "return document.getElementById(arguments[0]).getBoundingClientRect().top + window.scrollY", element_id
    )


def test_the_demo_login_sees_its_friends_and_one_passing_it_within_a_minute(web, browser, phone) -> None:
    call_command(
        "demo_load", players=300, matches=300, seed=3, no_progress=True, stdout=io.StringIO(), stderr=io.StringIO()
    )
    game = Game.objects.get(slug="demo")
    key, secret = server_key(game, name=KEY_NAME)
    rules = {b.slug: BoardRule(b.order, b.mode, b.min_score, b.max_score) for b in game.boards.all()}
    players = demo_players()
    _sign_in(browser, web, DEMO_LOGIN, DEMO_PASSWORD, "/games/demo/boards/rating/")
    _live(browser)
    assert _text(browser, "my-rank").startswith("#")
    friends = browser.find_elements(By.CSS_SELECTOR, "#friends tbody tr")
    assert len(friends) >= 5
    screenshot(browser, "demo-login-signed-in")

    stop = threading.Event()
    lines: list[str] = []
    traffic = threading.Thread(
        target=traffic_loop,
        kwargs={
            "base": web.url,
            "key_id": key.key_id,
            "secret": secret,
            "players": players,
            "rate": 2.0,
            "stop": stop,
            "say": lines.append,
            "rng": random.Random(5),
            "rivalry": Rivalry(rules),
        },
        daemon=True,
    )
    signed_in_at = time.monotonic()
    traffic.start()
    try:

        def passed(d):  # a change held back by the once-a-second limit: the Celery worker's flush
            return d.find_elements(By.CSS_SELECTOR, "#notices .notice")

        notice = WebDriverWait(browser, PASS_DEADLINE, poll_frequency=0.1).until(
            passed, message=f"no friend passed the demo login within {PASS_DEADLINE:.0f} s: {lines[-5:]}"
        )
        took = time.monotonic() - signed_in_at
        assert "passed you" in notice[0].text, notice[0].text
        screenshot(browser, "demo-friend-passed")
        print(f"a friend passed the demo login {took:.1f} s after signing in")

        # scores on every board, the speedrun shown as a time
        for board in ("speedrun", "kills"):
            browser.get(f"{web.url}/games/demo/boards/{board}/")
            assert _text(browser, "my-rank").startswith("#"), board
        browser.get(f"{web.url}/games/demo/boards/speedrun/")
        assert ":" in _text(browser, "my-score") and "." in _text(browser, "my-score")

        _sign_in(phone, web, DEMO_LOGIN, DEMO_PASSWORD, "/games/demo/boards/rating/")
        assert _top_of(phone, "my-card") < _top_of(phone, "friends") < _top_of(phone, "top")
        screenshot(phone, "demo-login-phone")
    finally:
        stop.set()
        traffic.join(timeout=15)
    assert not traffic.is_alive()


def test_a_board_page_shows_formats_seasons_countdown_podium_search_and_my_rank(
    web, browser, phone, server, game
) -> None:
    Board.objects.filter(game=game, slug="rating").update(format="duration_ms")
    Season.objects.filter(game=game, slug="s1").update(name="Winter Cup")
    config_cache_clear()
    _submit(server, "m-1", [_result(f"p{i:03d}", 200_000 + 1000 * i, f"Runner {i:03d}") for i in range(100)])
    _submit(server, "m-2", [_result(f"p{i:03d}", 200_000 + 1000 * i, f"Runner {i:03d}") for i in range(100, 150)])
    assert (
        server.request("PUT", "/api/v1/games/chess/players/p030/friends", {"friends": ["p029", "p031"]}).status_code
        == 200
    )
    _account("p030")  # rank 120 of 150: page 2
    _sign_in(browser, web, "p030", "pw-e2e-1", BOARD)
    _live(browser)

    rows = _rows(browser)
    assert rows[0]["cells"] == ["1", "Runner 149", "5:49.000"]  # 349,000 ms as a time
    assert [r["cls"] for r in rows[:4]] == ["top top-1", "top top-2", "top top-3", ""]
    assert "Winter Cup" in browser.find_element(By.CSS_SELECTOR, 'nav[aria-label="Windows"]').text
    age = browser.find_element(By.ID, "chart-age").text
    assert "as of" in age and "can trail the live count" in age
    assert (
        "150 ranked players: everyone with a score in this window, counted live"
        in browser.find_element(By.ID, "count-line").text
    )

    # a live row is formatted in the browser as on the server
    _submit(server, "m-3", [_result("fast", 400_000, "Flash")])
    _wait_live(browser, lambda d: _top_players(d)[:1] == ["fast"], "the new leader never appeared")
    first_row = _rows(browser)[0]
    assert first_row["cells"] == ["1", "Flash", "6:40.000"] and "top-1" in first_row["cls"].split()
    # and format.js agrees with scores/formats.py
    cases = [
        (v, f)
        for v in (0, 7, 999, 59_999, 281_897, 3_723_004, -5, 123_456)
        for f in ("integer", "duration_ms", "decimal:2", "decimal:3")
    ]
    got = browser.execute_script("return arguments[0].map(c => LeaderboardFormat.score(c[0], c[1]))", cases)
    assert got == [score_format(v, f) for v, f in cases]

    # search: rank and score, and where the list was cut
    browser.find_element(By.ID, "q").send_keys("Runner", Keys.ENTER)
    _wait(browser, lambda d: d.find_elements(By.ID, "search-count"), "no search results")
    assert "The first 20 of 150 players" in browser.find_element(By.ID, "search-count").text
    hit = browser.find_element(By.CSS_SELECTOR, ".results li").text
    assert "#" in hit and ":" in hit  # a rank and a time
    screenshot(browser, "board-search")

    # go to my rank: the page holding it, scrolled to my row
    browser.find_element(By.ID, "goto-me").click()
    in_view = (
        "const e = document.getElementById('me'); if (!e || !location.search.includes('page=2')) return false;"
        "const r = e.getBoundingClientRect(); return r.top >= 8 && r.bottom <= innerHeight"
    )
    _wait(browser, lambda d: d.execute_script(in_view), "go to my rank did not show my row on page 2")
    assert browser.find_element(By.CSS_SELECTOR, "tr.me").text.startswith("121")
    screenshot(browser, "board-go-to-my-rank")

    # the countdown to today's reset ticks
    browser.find_element(By.LINK_TEXT, "Today").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "countdown"), "no countdown on today's board")
    first = _text(browser, "countdown")
    _wait(browser, lambda d: _text(d, "countdown") != first, "the countdown did not tick")
    assert "at 00:00 UTC" in browser.find_element(By.ID, "reset").text
    screenshot(browser, "board-countdown")

    # on a phone the card and friends come before the long table, and nothing scrolls sideways
    _sign_in(phone, web, "p030", "pw-e2e-1", BOARD)
    assert _top_of(phone, "my-card") < _top_of(phone, "friends") < _top_of(phone, "top")
    assert phone.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "board-extras-phone")


def _post(server, match_id: str, player: str, score: int, minutes_ago: int) -> None:
    ended = (timezone.now() - timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")
    body = {"match_id": match_id, "ended_at": ended, "results": [{"player": player, "board": "rating", "score": score}]}
    assert server.post("/api/v1/games/chess/matches", body).status_code == 201


def test_the_player_page_for_the_player_a_friend_and_not_a_stranger(web, browser, phone, server, game) -> None:
    Board.objects.filter(game=game, slug="rating").update(anticheat={"history_factor": 2, "history_min_gap": 1})
    config_cache_clear()
    _submit(server, "m-0", [_result("ana", 1000, "Ana"), _result("bo", 900, "Bo"), _result("cy", 800, "Cy")])
    _post(server, "m-best", "ana", 1500, 4)
    _post(server, "m-void", "ana", 1600, 3)
    _post(server, "m-held", "ana", 9000, 2)
    assert server.post("/api/v1/games/chess/matches/m-void/void", {"reason": "e2e"}).status_code == 200
    assert server.request("PUT", "/api/v1/games/chess/players/ana/friends", {"friends": ["bo"]}).status_code == 200
    for p in ("ana", "bo", "cy"):
        _account(p)

    _sign_in(browser, web, "ana", "pw-e2e-1", BOARD)
    browser.find_element(By.LINK_TEXT, "My results →").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "player-page"), "the player page did not open")
    matches = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#board-rating .results-table td.match")]
    assert matches == ["m-0", "m-held", "m-void", "m-best"]  # newest first
    tags = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#board-rating .results-table .tag")]
    assert tags[0] == "held for review" and tags[1] == "voided" and tags[2].startswith("current best: All time")
    standing = browser.find_element(By.CSS_SELECTOR, '#board-rating .standings-table tr[data-window="all"]').text
    assert "#1" in standing
    screenshot(browser, "player-page")

    _sign_in(phone, web, "bo", "pw-e2e-1", BOARD)  # a friend
    phone.get(f"{web.url}/games/chess/players/ana/")
    assert phone.find_elements(By.ID, "player-page")
    assert phone.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "player-page-phone")

    browser.delete_all_cookies()
    _sign_in(browser, web, "cy", "pw-e2e-1", BOARD)
    browser.get(f"{web.url}/games/chess/players/ana/")
    page = browser.find_element(By.ID, "error-page")
    assert page.get_attribute("data-status") == "403" and "their friends" in page.text
    screenshot(browser, "player-page-forbidden")


def test_the_season_archive_with_final_positions_and_a_correction(web, browser, phone, server, game) -> None:
    SeasonFactory(
        game=game, slug="s0", name="Autumn Cup", starts_at="2026-09-01T00:00:00Z", ends_at="2026-11-01T00:00:00Z"
    )
    config_cache_clear()
    day = "2026-11-28T12:00:00Z"
    for match_id, at in (("m-day", day), ("m-season", "2026-10-15T12:00:00Z")):
        body = {
            "match_id": match_id,
            "ended_at": at,
            "results": [_result("ana", 500, "Ana"), _result("bo", 400, "Bo"), _result("cy", 300, "Cy")],
        }
        assert server.post("/api/v1/games/chess/matches", body).status_code == 201
    cheat = {"match_id": "m-cheat", "ended_at": day, "results": [_result("zed", 9000, "Zed")]}
    assert server.post("/api/v1/games/chess/matches", cheat).status_code == 201
    board = cached_board("chess", board_slug="rating")
    assert seasons.window_freeze(board=board, window="daily:2026-11-28", reason="window closed")
    assert seasons.window_freeze(board=board, window="season:s0", reason="window closed")
    assert server.post("/api/v1/games/chess/matches/m-cheat/void", {"reason": "cheating"}).status_code == 200
    _account("cy")

    _sign_in(browser, web, "cy", "pw-e2e-1", BOARD)
    browser.find_element(By.LINK_TEXT, "Season archive").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "archive-page"), "the archive did not open")
    season = browser.find_element(By.CSS_SELECTOR, 'tr[data-window="season:s0"]').text
    assert "Autumn Cup" in season and "Ana" in season and "#3" in season
    day_row = browser.find_element(By.CSS_SELECTOR, 'tr[data-window="daily:2026-11-28"]').text
    assert "corrected" in day_row and "version 2" in day_row and "Ana" in day_row and "#3" in day_row
    screenshot(browser, "archive")
    browser.find_element(By.LINK_TEXT, "Autumn Cup").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "frozen-banner"), "the season's final standings did not open")
    assert [r["cells"][1] for r in _rows(browser)] == ["Ana", "Bo", "Cy"]
    assert _text(browser, "my-rank") == "#3"
    browser.get(f"{web.url}{BOARD}?window=daily:2026-11-28")
    assert "Corrected" in browser.find_element(By.ID, "frozen-banner").text

    phone.get(f"{web.url}{BOARD}archive/")
    assert phone.find_elements(By.ID, "archive-page")
    assert phone.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "archive-phone")


def test_html_error_pages_the_api_keeps_json_and_a_favicon(web_with_bugs, browser, phone, game) -> None:
    for driver, size in ((browser, "desktop"), (phone, "phone")):
        driver.get(f"{web_with_bugs.url}/no/such/page/")
        assert driver.find_element(By.ID, "error-page").get_attribute("data-status") == "404"
        assert driver.find_element(By.CSS_SELECTOR, "header.site .brand").is_displayed()  # the site's style
        screenshot(driver, f"error-404-{size}")
        driver.get(f"{web_with_bugs.url}/boom/")
        assert driver.find_element(By.ID, "error-page").get_attribute("data-status") == "500"
        assert "Something went wrong" in driver.find_element(By.TAG_NAME, "h1").text
        screenshot(driver, f"error-500-{size}")
    icon = browser.execute_async_script(
        "const done = arguments[0]; fetch('/favicon.ico').then(r => done([r.status, r.headers.get('content-type')]));"
    )
    assert icon == [200, "image/x-icon"]
    for path, status, code in (("/api/v1/boom", 500, "internal_error"), ("/api/v1/nothing", 404, "not_found")):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(web_with_bugs.url + path, timeout=10)
        assert err.value.code == status
        assert json.loads(err.value.read())["error"]["code"] == code


def test_the_board_page_passes_axe_and_works_from_the_keyboard(web, browser, phone, server, game) -> None:
    _submit(server, "m-1", [_result(f"p{i:02d}", 1000 + 10 * i, f"Player {i}") for i in range(30)])
    assert (
        server.request("PUT", "/api/v1/games/chess/players/p05/friends", {"friends": ["p04", "p06"]}).status_code == 200
    )
    _account("p05")

    browser.get(f"{web.url}{BOARD}")
    _live(browser)
    assert axe_violations(browser) == [], "axe: serious or critical violations, signed out"
    screenshot(browser, "a11y-signed-out")

    # the keyboard: the skip link first, then through the controls; Enter follows a tab
    ActionChains(browser).send_keys(Keys.TAB).perform()
    assert browser.execute_script("return document.activeElement.className") == "skip"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    _wait(browser, lambda d: d.execute_script("return document.activeElement.id") == "content", "skip link")
    for _ in range(40):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        if browser.execute_script("return document.activeElement.textContent.trim()") == "Today":
            break
    else:
        pytest.fail("the Today tab is not reachable with Tab")
    outline = browser.execute_script("return getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none"), "no visible focus ring"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    _wait(browser, lambda d: "window=daily" in d.current_url, "Enter on the Today tab did nothing")

    _sign_in(browser, web, "p05", "pw-e2e-1", BOARD)
    _live(browser)
    assert axe_violations(browser) == [], "axe: serious or critical violations, signed in"
    # rank changes are announced (aria-live)
    assert browser.find_element(By.ID, "announcer").get_attribute("aria-live") == "polite"
    _submit(server, "m-2", [_result("p05", 5000)])
    _wait_live(
        browser, lambda d: "Your rank is now 1" in (_text(d, "announcer") or ""), "no announcement of the new rank"
    )
    screenshot(browser, "a11y-signed-in")

    _sign_in(phone, web, "p05", "pw-e2e-1", BOARD)
    assert axe_violations(phone) == [], "axe: serious or critical violations on a phone"
    screenshot(phone, "a11y-phone")
