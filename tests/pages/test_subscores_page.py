"""A board page of a board with sub-scores (docs/api.md §2.3): a column per declared sub-score,
in declared order, beside the score in the board's format; the frozen standings too."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.test import Client

from scores.selectors import cached_board
from seasons.services import window_freeze, windows_close
from tests.conftest import SignedClient, game_with_boards
from tests.factories import BoardFactory, GameFactory, SeasonFactory, server_key
from tests.pages.conftest import signed_in
from tests.pages.test_board_pages import rows
from tests.projector import projected
from tests.reference import RefBoard

pytestmark = pytest.mark.usefixtures("real_projector")

LAPS = RefBoard("laps", "asc", "best", 0, 600_000, subscores=(("pits", "asc", 0, 9), ("overtakes", "desc", 0, 20)))
# one match of three players, and the rows a page shows for it (fewer pits first on equal times)
RESULTS = [
    {"player": "ana", "board": "laps", "score": 81_250, "subscores": {"pits": 2, "overtakes": 5}},
    {"player": "bo", "board": "laps", "score": 81_250, "subscores": {"pits": 1}},  # fewer pits: ahead
    {"player": "cy", "board": "laps", "score": 79_001, "subscores": {"pits": 3, "overtakes": 0}},
]
WANT = [["1", "cy", "1:19.001", "3", "0"], ["2", "bo", "1:21.250", "1", "0"], ["3", "ana", "1:21.250", "2", "5"]]


def test_a_board_page_shows_each_subscore_beside_the_formatted_score(transactional_db) -> None:
    game, server = game_with_boards("race", [(LAPS, "unique")])
    game.boards.filter(slug="laps").update(format="duration_ms")
    body = {"match_id": "r1", "ended_at": "2026-11-29T12:00:00Z", "results": RESULTS}
    assert server.post("/api/v1/games/race/matches", body).status_code == 201
    projected()
    html = Client().get("/games/race/boards/laps/").content.decode()
    assert '<th class="subscore" scope="col">pits</th><th class="subscore" scope="col">overtakes</th>' in html
    assert 'data-subscores="pits,overtakes"' in html  # what live.js adds the columns of live rows by
    assert rows(html) == WANT
    windows_close(now=datetime(2026, 11, 30, 0, 5, tzinfo=UTC))
    frozen = Client().get("/games/race/boards/laps/?window=daily:2026-11-29").content.decode()
    assert rows(frozen) == WANT


def _league_rows(html: str) -> list[list[str]]:
    section = re.search(r'<section class="card league" id="league".*?</section>', html, re.S)
    assert section, "no league section"
    return rows(section.group(0).replace("<tbody>", '<tbody id="league-body">'), "league-body")


def test_the_league_group_shows_each_subscore_running_and_frozen_as_the_archive_links_it(transactional_db) -> None:
    """The signed-in player's league group (docs/competitions.md, "Leagues") on a board with
    sub-scores: a column per sub-score, in the running season and on the frozen season's page
    the archive links to; the lines across all the columns."""
    game = GameFactory(slug="race", reset_timezone="UTC")
    SeasonFactory(
        game=game, slug="s1", starts_at=datetime(2026, 9, 1, tzinfo=UTC), ends_at=datetime(2026, 10, 1, tzinfo=UTC)
    )
    BoardFactory(
        game=game,
        slug="laps",
        order="asc",
        format="duration_ms",
        windows=["all", "season"],
        max_score=600_000,
        league={"tiers": ["bronze", "silver"], "size": 4, "promote": 1, "relegate": 1},
        subscores=[{"name": n, "order": o, "min": lo, "max": hi} for n, o, lo, hi in LAPS.subscores],
    )
    key, secret = server_key(game)
    server = SignedClient(key.key_id, secret)
    body = {"match_id": "r1", "ended_at": "2026-09-12T12:00:00Z", "results": RESULTS}
    assert server.post("/api/v1/games/race/matches", body).status_code == 201
    projected()
    page = "/games/race/boards/laps/?window=season:s1"
    html = signed_in("ana").get(page).content.decode()
    assert '<th class="subscore" scope="col">pits</th><th class="subscore" scope="col">overtakes</th>' in html
    assert _league_rows(html) == [WANT[0], ["▲ promotion line"], WANT[1], WANT[2]]  # the lowest tier: none go down
    assert html.count('colspan="5">▲ promotion line') == 1  # the line spans the sub-score columns

    assert window_freeze(board=cached_board("race", board_slug="laps"), window="season:s1", reason="closed")
    archive = signed_in("ana").get("/games/race/boards/laps/archive/").content.decode()
    assert 'href="/games/race/boards/laps/?window=season%3As1"' in archive
    frozen = signed_in("ana").get(page).content.decode()
    assert _league_rows(frozen) == [WANT[0], ["▲ promotion line"], WANT[1], WANT[2]]


def test_a_players_page_shows_the_subscores_of_their_standing_and_of_each_result(transactional_db) -> None:
    """docs/players.md: the player's own page on a board with sub-scores, a column per sub-score
    in their standings and their results; of two results of one score and one moment, only the
    one whose whole tuple is the value is marked as setting it."""
    game, server = game_with_boards("race", [(LAPS, "unique")], windows=["all"])
    game.boards.filter(slug="laps").update(format="duration_ms")
    at = "2026-11-29T12:00:00Z"
    for match_id, score, subs in [("r1", 81_250, {"pits": 2}), ("r2", 81_250, {"pits": 1, "overtakes": 4})]:
        result = {"player": "ana", "board": "laps", "score": score, "subscores": subs}
        body = {"match_id": match_id, "ended_at": at, "results": [result]}
        assert server.post("/api/v1/games/race/matches", body).status_code == 201
    body = {
        "match_id": "r3",
        "ended_at": "2026-11-29T13:00:00Z",
        "results": [{"player": "ana", "board": "laps", "score": 90_000}],
    }
    assert server.post("/api/v1/games/race/matches", body).status_code == 201
    projected()
    html = signed_in("ana").get("/games/race/players/ana/").content.decode()
    section = html.split('id="board-laps"', 1)[1].split("</section>", 1)[0]
    heads = '<th class="subscore" scope="col">pits</th><th class="subscore" scope="col">overtakes</th>'
    assert section.count(heads) == 2  # the standings and the results
    standings = section.split('class="board compact standings-table"', 1)[1].split("</table>", 1)[0]
    assert [r[:5] for r in rows(standings.replace("<tbody>", '<tbody id="s">'), "s")] == [
        ["All time", "#1", "1:21.250", "1", "4"]  # the best whole tuple: r2's
    ]
    results = section.split('class="board compact results-table"', 1)[1].split("</table>", 1)[0]
    got = rows(results.replace("<tbody>", '<tbody id="r">'), "r")
    assert [r[1:5] for r in got] == [
        ["r3", "1:30.000", "9", "0"],
        ["r2", "1:21.250", "1", "4"],
        ["r1", "1:21.250", "2", "0"],
    ]
    assert [bool(r[5]) for r in got] == [False, True, False]  # r2 alone set the value


def _cells(html: str, start: str) -> list[list[str]]:
    """The rows of the first table after `start`, as lists of cell texts."""
    table = html.split(start, 1)[1].split("</table>", 1)[0]
    return rows(table.replace("<tbody>", '<tbody id="t">'), "t")


def test_the_rank_card_and_the_friends_table_show_the_subscores_live_and_frozen(transactional_db) -> None:
    """docs/players.md: a signed-in player's card (their sub-scores beside the score, and the
    players around them) and the friends table have the sub-scores too, running and frozen."""
    game, server = game_with_boards("race", [(LAPS, "unique")])
    game.boards.filter(slug="laps").update(format="duration_ms")
    results = [
        {"player": "ana", "board": "laps", "score": 81_250, "subscores": {"pits": 2, "overtakes": 5}},
        {"player": "bo", "board": "laps", "score": 81_250, "subscores": {"pits": 1}},
    ]
    body = {"match_id": "r1", "ended_at": "2026-11-29T12:00:00Z", "results": results}
    assert server.post("/api/v1/games/race/matches", body).status_code == 201
    assert server.request("PUT", "/api/v1/games/race/players/ana/friends", {"friends": ["bo"]}).status_code == 200
    projected()
    want = [["1", "bo", "1:21.250", "1", "0"], ["2", "ana", "1:21.250", "2", "5"]]
    windows_close(now=datetime(2026, 11, 30, 0, 5, tzinfo=UTC))
    for page in ("/games/race/boards/laps/", "/games/race/boards/laps/?window=daily:2026-11-29"):
        html = signed_in("ana").get(page).content.decode()
        card = html.split('id="my-card"', 1)[1].split("</section>", 1)[0]
        assert re.findall(r'<div class="subscore"><dt>(\w+)</dt><dd>(\d+)</dd></div>', card) == [
            ("pits", "2"),
            ("overtakes", "5"),
        ], page
        assert _cells(card, 'id="my-around"') == want, page
        friends = html.split('id="friends"', 1)[1]
        assert [r[:5] for r in _cells(friends, "<table")] == want, page
        part = signed_in("ana").get(page + ("&" if "?" in page else "?") + "part=rank-card").content.decode()
        assert _cells(part, 'id="my-around"') == want, page  # what live.js swaps in
