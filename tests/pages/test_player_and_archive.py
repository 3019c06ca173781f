"""The player page (/games/{game}/players/{player}/: results per board newest first, held and
voided ones marked, which set a current value, rank per board and window; for the player,
their friends and staff only) and a board's season archive (frozen windows with their winner,
the signed-in player's final position, and a corrected version after a void)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scores.models import Board
from scores.selectors import cached_board, config_cache_clear
from seasons import services as seasons
from tests.boards.conftest import submit
from tests.pages.conftest import signed_in
from tests.pages.test_board_pages import text

# the pages after results the real projector process applied (tests/projector.py)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("real_projector")]

PAGE = "/games/chess/players/{}/"
ARCHIVE = "/games/chess/boards/rating/archive/"


def result_rows(html: str, board: str) -> list[list[str]]:
    section = html.split(f'id="board-{board}"', 1)[1].split("</section>", 1)[0]
    body = section.split('class="board compact results-table"', 1)[1]
    return [
        [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", td)).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        for tr in re.findall(r'<tr class="result[^"]*"[^>]*>(.*?)</tr>', body, re.S)
    ]


def test_only_the_player_friends_and_staff_see_a_players_page(ranked) -> None:
    assert ranked.request("PUT", "/api/v1/games/chess/players/eve/friends", {"friends": ["bo"]}).status_code == 200
    anonymous = Client().get(PAGE.format("eve"))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/?next=")
    stranger = signed_in("cy").get(PAGE.format("eve"))
    assert stranger.status_code == 403 and "shown to the player, their friends and staff" in stranger.content.decode()
    assert signed_in("bo").get(PAGE.format("eve")).status_code == 200  # a friend
    assert signed_in("eve").get(PAGE.format("eve")).status_code == 200  # the player
    staff = get_user_model().objects.create_user(username="mod", password="pw-staff-1", is_staff=True)
    browser = Client()
    browser.force_login(staff)
    assert browser.get(PAGE.format("eve")).status_code == 200
    assert Client().get(PAGE.format("nobody")).status_code == 404
    assert Client().get("/games/nope/players/eve/").status_code == 404


def test_results_newest_first_marked_held_voided_and_current_best(server, game) -> None:
    Board.objects.filter(game=game, slug="rating").update(anticheat={"history_factor": 2, "history_min_gap": 1})
    config_cache_clear()
    submit(
        server,
        "m-old",
        [{"player": "ana", "board": "rating", "score": 300, "display_name": "Ana"}],
        at="2026-11-27T10:00:00Z",
    )
    submit(server, "m-best", [{"player": "ana", "board": "rating", "score": 500}], at="2026-11-28T10:00:00Z")
    submit(server, "m-void", [{"player": "ana", "board": "rating", "score": 550}], at="2026-11-28T11:00:00Z")
    submit(server, "m-held", [{"player": "ana", "board": "rating", "score": 5000}], at="2026-11-28T12:00:00Z")
    assert server.post("/api/v1/games/chess/matches/m-void/void", {"reason": "test"}).status_code == 200
    submit(server, "m-kills", [{"player": "ana", "board": "points", "score": 7}], at="2026-11-28T12:30:00Z")
    html = signed_in("ana").get(PAGE.format("ana")).content.decode()
    got = result_rows(html, "rating")
    assert [r[1] for r in got] == ["m-held", "m-void", "m-best", "m-old"]  # newest first
    assert got[0][3] == "held for review" and got[1][3] == "voided"
    assert got[2][3].startswith("current best: All time") and "S1" in got[2][3]
    assert got[3][3] == ""  # an older, lower result sets nothing now
    points = result_rows(html, "points")
    assert points[0][1] == "m-kills" and points[0][3].startswith("counts in: All time")
    # rank per board and window: ana leads rating all time with 500
    section = html.split('id="board-rating"', 1)[1].split("</section>", 1)[0]
    all_time = re.search(r'<tr data-window="all">(.*?)</tr>', section, re.S).group(1)
    assert "#1" in all_time and ">500<" in all_time
    today = re.search(r'<tr data-window="daily">(.*?)</tr>', section, re.S).group(1)
    assert "no score" in today  # the results are from 2026-11-28, not today


def test_a_boards_results_page_through(server, game) -> None:
    for i in range(60):
        submit(
            server,
            f"m{i:02d}",
            [{"player": "ana", "board": "golf", "score": 60 + i % 30}],
            at=f"2026-11-2{i // 30}T1{i % 10}:{i:02d}:00Z",
        )
    client = signed_in("ana")
    overview = client.get(PAGE.format("ana")).content.decode()
    assert len(result_rows(overview, "golf")) == 10 and "All 60 results on Golf" in overview
    page2 = client.get(PAGE.format("ana") + "?board=golf&page=2").content.decode()
    assert len(result_rows(page2, "golf")) == 10 and 'id="board-rating"' not in page2
    assert "page 2 of 2" in text(page2)
    assert client.get(PAGE.format("ana") + "?board=nope").status_code == 404


def test_the_archive_lists_frozen_windows_with_winner_position_and_corrections(ranked) -> None:
    board = cached_board("chess", board_slug="rating")
    assert seasons.window_freeze(board=board, window="daily:2026-11-28", reason="window closed") is not None
    anonymous = Client().get(ARCHIVE).content.decode()
    row = re.search(r'<tr data-window="daily:2026-11-28">(.*?)</tr>', anonymous, re.S).group(1)
    assert "Day 2026-11-28" in row and "Ana" in text(row) and "5 players" in text(row)
    assert 'href="/games/chess/boards/rating/?window=daily%3A2026-11-28"' in row
    assert "corrected" not in row and "Sign in to see your final position" in anonymous
    # the signed-in player's final position
    mine = signed_in("cy").get(ARCHIVE).content.decode()
    assert re.search(r'<td class="rank mine">#3</td>', mine)
    # a void after the freeze makes a corrected version, which says so and when
    assert ranked.post("/api/v1/games/chess/matches/m1/void", {"reason": "cheating"}).status_code == 200
    after = Client().get(ARCHIVE).content.decode()
    row = re.search(r'<tr data-window="daily:2026-11-28">(.*?)</tr>', after, re.S).group(1)
    assert "corrected" in row and "version 2" in row
    page = Client().get("/games/chess/boards/rating/?window=daily:2026-11-28").content.decode()
    assert "Corrected" in page and "first frozen" in page
    # the season has not ended: nothing pending; an unknown board or region is a 404 page
    assert "Seasons" not in after
    assert Client().get("/games/chess/boards/nope/archive/").status_code == 404
    assert Client().get(ARCHIVE + "?region=eu").status_code == 404


# the queries of a game config read (scores/selectors/config.py _load_game: the game, its
# seasons, regions and boards)
CONFIG_REREAD = 4


def test_the_player_page_and_the_archive_cost_a_fixed_handful_of_queries(
    server, game, django_assert_max_num_queries
) -> None:
    """No query per result, board or window: the same budget for 3 results as for 60."""
    board = cached_board("chess", board_slug="rating")
    for n, day in ((3, "2026-11-26"), (60, "2026-11-27")):
        for i in range(n):
            submit(
                server, f"q-{day}-{i}", [{"player": "ana", "board": "rating", "score": i}], at=f"{day}T10:{i:02d}:00Z"
            )
        seasons.window_freeze(board=board, window=f"daily:{day}", reason="window closed")
        client = signed_in("ana")
        client.get(PAGE.format("ana"))  # warm the per-process config cache, as a running process has it
        # session, user, the viewer's and the page's player, names, result counts, values, one
        # query of results per board; plus the game's config again when its 5 s
        # cache ran out meanwhile, as it did once on a loaded machine: a fixed cost too
        with django_assert_max_num_queries(12 + CONFIG_REREAD):
            assert client.get(PAGE.format("ana")).status_code == 200
        # session, user, the viewer's player, the board's freezes, winners, the viewer's positions
        with django_assert_max_num_queries(7 + CONFIG_REREAD):
            assert client.get(ARCHIVE).status_code == 200
