"""The tournament and league pages (docs/competitions.md) in a real headless browser, at desktop
size and on a phone, with screenshots in tests/e2e/screenshots/: the game page lists its
tournaments by state with countdowns that tick and turn into a reload link at zero; a
tournament's board page shows its state, size, rules and whether the signed-in player joined;
a player's page lists the tournaments they joined; a league board shows the signed-in player's
group with the promotion and relegation lines."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from competitions.models import LeagueOutcome
from scores.models import Player
from tests.conftest import SignedClient
from tests.e2e.conftest import screenshot
from tests.e2e.test_browser import _account, _sign_in, _text, _top_players, _wait
from tests.factories import BoardFactory, GameFactory, PlayerFactory, SeasonFactory, server_key, tournament_settings

pytestmark = pytest.mark.slow

LEAGUE = {"tiers": ["bronze", "silver", "gold"], "size": 6, "promote": 2, "relegate": 2}
SOON_SECONDS = 20  # the tournament that ends while its page is open


def _tournament(now: datetime, start: timedelta, end: timedelta, **settings) -> dict:
    return tournament_settings(now + start, now + end, **settings)


@pytest.fixture
def arena(transactional_db) -> tuple[SignedClient, datetime]:
    now = timezone.now().replace(microsecond=0)
    game = GameFactory(slug="arena", name="Arena")
    cup = _tournament(now, -timedelta(days=1), timedelta(hours=2), join_required=True, max_size=8, max_attempts=3)
    BoardFactory(game=game, slug="cup", name="Winter Cup", windows=["all"], tournament=cup)
    BoardFactory(
        game=game,
        slug="sprint",
        name="Sprint",
        windows=["all"],
        tournament=_tournament(now, -timedelta(hours=1), timedelta(seconds=SOON_SECONDS)),
    )
    BoardFactory(
        game=game,
        slug="spring",
        name="Spring Open",
        windows=["all"],
        tournament=_tournament(now, timedelta(days=3), timedelta(days=5), max_size=100),
    )
    BoardFactory(
        game=game,
        slug="autumn",
        name="Autumn Open",
        windows=["all"],
        tournament=_tournament(now, -timedelta(days=9), -timedelta(days=7)),
    )
    BoardFactory(game=game, slug="ladder", name="Ladder", windows=["all", "season"], league=LEAGUE)
    before = SeasonFactory(game=game, slug="s0", starts_at=now - timedelta(days=40), ends_at=now - timedelta(days=10))
    SeasonFactory(
        game=game, slug="s1", name="Season One", starts_at=now - timedelta(days=10), ends_at=now + timedelta(days=20)
    )
    # The last season's outcome put these six in silver: written directly, since this test is
    # about the page (tests/competitions/test_leagues.py settles seasons through the freeze).
    ladder = game.boards.get(slug="ladder")
    names = ["ana", "bo", "cy", "dee", "eve", "fay"]
    for name in names:
        player = PlayerFactory(game=game, external_id=name, display_name=name.title())
        LeagueOutcome.objects.create(board=ladder, season=before, player=player, tier_next=1)
    key, secret = server_key(game)
    server = SignedClient(key.key_id, secret)
    ended = (now - timedelta(minutes=5)).isoformat()
    results = [{"player": n, "board": "ladder", "score": 600 - 100 * i} for i, n in enumerate(names)]
    r = server.post("/api/v1/games/arena/matches", {"match_id": "l1", "ended_at": ended, "results": results})
    assert r.status_code == 201, r.content
    r = server.post("/api/v1/games/arena/tournaments/cup/players/ana/join", {})
    assert r.status_code == 200 and r.json() == {"joined": True, "size": 1}, r.content
    cup_result = [{"player": "ana", "board": "cup", "score": 40}]
    r = server.post("/api/v1/games/arena/matches", {"match_id": "c1", "ended_at": ended, "results": cup_result})
    assert r.status_code == 201, r.content
    _account("ana")
    assert Player.objects.filter(game=game).count() == 6
    return server, now


def _tournaments(driver) -> list[list[str]]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#tournaments .tournament'),"
        " t => [t.dataset.tournament, t.querySelector('.pill').textContent.trim()])"
    )


def _left(driver, slug: str) -> str | None:
    return driver.execute_script(
        "const e = document.querySelector(`[data-tournament='${arguments[0]}'] .countdown`);"
        "return e && e.textContent.trim()",
        slug,
    )


def test_the_game_page_lists_tournaments_by_state_with_ticking_countdowns(web, browser, phone, arena) -> None:
    browser.get(f"{web.url}/games/arena/")
    # active first, then upcoming, then ended; by start within each
    assert _tournaments(browser) == [
        ["cup", "active"],
        ["sprint", "active"],
        ["spring", "upcoming"],
        ["autumn", "ended"],
    ]
    first = _left(browser, "cup")
    assert first and first.startswith("Ends in 1 h 5"), first
    assert _left(browser, "spring").startswith("Starts in 2 d 23 h") or _left(browser, "spring").startswith(
        "Starts in 3 d"
    )
    assert _left(browser, "autumn") is None  # an ended tournament has nothing to count down
    rules = browser.find_element(By.CSS_SELECTOR, "[data-tournament='cup'] .tournament-rules").text
    assert rules == "1 of 8 joined · join to play · 3 results count per tournament"
    _wait(browser, lambda d: _left(d, "cup") != first, "the countdown never ticked")
    screenshot(browser, "tournaments-game-page")

    # the sprint ends while the page is open: its countdown becomes a reload link
    WebDriverWait(browser, SOON_SECONDS + 15, poll_frequency=0.1).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "[data-tournament='sprint'] .countdown a"),
        message="the ended sprint's countdown never offered a reload",
    )
    link = browser.find_element(By.CSS_SELECTOR, "[data-tournament='sprint'] .countdown a")
    assert link.text == "Ended: reload for the final standings"
    link.click()
    _wait(browser, lambda d: ["sprint", "ended"] in _tournaments(d), "the reloaded page still shows the sprint active")

    phone.get(f"{web.url}/games/arena/")
    width = phone.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, f"the game page scrolls sideways on a phone ({width} px)"
    screenshot(phone, "tournaments-game-page-phone")


def test_a_tournament_board_and_a_players_page_show_the_tournament(web, browser, arena) -> None:
    browser.get(f"{web.url}/games/arena/boards/cup/")
    box = _text(browser, "tournament")  # read in one script: live.js may swap parts of a live page
    assert box is not None and "active" in box and "1 of 8 joined" in box
    assert "you joined" not in box  # nobody signed in
    assert _top_players(browser) == ["ana"]  # read in one script, as live.js redraws the rows

    _sign_in(browser, web, "ana", "pw-e2e-1", "/games/arena/boards/cup/")
    assert _text(browser, "tournament").endswith("you joined")
    screenshot(browser, "tournament-board-page")
    browser.get(f"{web.url}/games/arena/boards/spring/")
    assert "you have not joined" in _text(browser, "tournament")
    assert "upcoming" in _text(browser, "tournament")

    browser.get(f"{web.url}/games/arena/players/ana/")
    joined = browser.find_elements(By.CSS_SELECTOR, "#joined-tournaments .tournament")
    assert [t.get_attribute("data-tournament") for t in joined] == ["cup"]
    screenshot(browser, "tournament-player-page")
    browser.get(f"{web.url}/games/arena/players/bo/")  # not a friend: nothing of bo's shows
    assert not browser.find_elements(By.ID, "joined-tournaments")


def _league_rows(driver) -> list[list[str]]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#league tbody tr'),"
        " tr => [tr.dataset.player || tr.textContent.trim(), tr.className.trim()])"
    )


def test_a_league_board_shows_your_group_with_the_promotion_and_relegation_lines(web, browser, phone, arena) -> None:
    browser.get(f"{web.url}/games/arena/boards/ladder/")
    assert not browser.find_elements(By.ID, "league")  # nobody signed in
    _sign_in(browser, web, "ana", "pw-e2e-1", "/games/arena/boards/ladder/")
    league = browser.find_element(By.ID, "league")
    assert league.get_attribute("data-tier") == "silver"
    assert _league_rows(browser) == [
        ["ana", "me promote"],
        ["bo", "promote"],
        ["▲ promotion line", "line promote-line"],
        ["cy", ""],
        ["dee", ""],
        ["▼ relegation line", "line relegate-line"],
        ["eve", "relegate"],
        ["fay", "relegate"],
    ]
    assert "ranks 1–2 move up a tier, ranks 5 and below move down" in league.text
    browser.execute_script("document.getElementById('league').scrollIntoView()")
    screenshot(browser, "league-board-page")

    # the season's own tab shows the same group
    browser.get(f"{web.url}/games/arena/boards/ladder/?window=season")
    assert browser.find_element(By.ID, "league").get_attribute("data-tier") == "silver"

    _sign_in(phone, web, "ana", "pw-e2e-1", "/games/arena/boards/ladder/")
    assert phone.find_element(By.ID, "league").is_displayed()
    width = phone.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, f"the league page scrolls sideways on a phone ({width} px)"
    phone.execute_script("document.getElementById('league').scrollIntoView()")
    screenshot(phone, "league-board-page-phone")


def test_a_signed_in_player_joins_with_the_button_until_the_tournament_is_full(web, browser, phone, arena) -> None:
    """The join button (a plain form, CSRF-checked): bo joins the last place and is told so;
    cy, whose page still offered the button, is told the tournament is full, and the box then
    says full instead of offering it."""
    server, _ = arena
    _account("bo")
    _account("cy")
    _sign_in(browser, web, "bo", "pw-e2e-1", "/games/arena/boards/cup/")
    _sign_in(phone, web, "cy", "pw-e2e-1", "/games/arena/boards/cup/")
    for driver in (browser, phone):
        assert "you have not joined" in _text(driver, "tournament")
        assert driver.find_element(By.ID, "join-button").text == "Join Winter Cup"
    for i in range(6):  # ana and six others: one place left of 8
        r = server.post(f"/api/v1/games/arena/tournaments/cup/players/x{i}/join", {})
        assert r.status_code == 200, r.content

    browser.find_element(By.ID, "join-button").click()
    _wait(
        browser,
        lambda d: "You joined Winter Cup: 8 of 8 joined." in (_text(d, "tournament") or ""),
        "joining did not say so",
    )
    box = " ".join(_text(browser, "tournament").split())
    assert "8 of 8 joined · join to play · 3 results count per tournament · you joined" in box
    assert not browser.find_elements(By.ID, "join-button")
    screenshot(browser, "tournament-join")

    phone.find_element(By.ID, "join-button").click()  # rendered while a place was left
    _wait(
        phone,
        lambda d: "Winter Cup is full: all 8 places are taken." in (_text(d, "tournament") or ""),
        "a join into a full tournament did not say it was full",
    )
    assert phone.find_element(By.ID, "join-state").text == "Full: all 8 places are taken, so no one else can join."
    assert not phone.find_elements(By.ID, "join-button")
    width = phone.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, f"the tournament box scrolls sideways on a phone ({width} px)"
    phone.execute_script("document.getElementById('tournament').scrollIntoView()")
    screenshot(phone, "tournament-join-full-phone")
    joined = server.get("/api/v1/games/arena/tournaments?state=active").json()["tournaments"]
    assert {t["slug"]: t["size"] for t in joined}["cup"] == 8
