"""The player web pages as a browser without JavaScript sees them (server-rendered HTML)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from pages import board as board_page
from scores.models import Player, Season
from scores.selectors import cached_board, config_cache_clear, player_name_matches
from seasons import services as seasons
from tests.boards.conftest import submit
from tests.conftest import SignedClient
from tests.pages.conftest import BOARD, signed_in

# the pages after results the real projector process applied (tests/projector.py)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("real_projector")]


def rows(html: str, table: str = "top-body") -> list[list[str]]:
    """The rows of a table body as lists of cell texts."""
    body = re.search(rf'<tbody id="{table}">(.*?)</tbody>', html, re.S)
    assert body, f"no tbody #{table}"
    out = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S):
        out.append([re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)])
    return out


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_index_lists_games_and_their_boards(game) -> None:
    html = Client().get("/").content.decode()
    assert "Chess" in html
    for board in ("rating", "golf", "points"):
        assert f'href="/games/chess/boards/{board}/"' in html


def test_a_board_page_shows_the_top_in_board_order_with_window_tabs(ranked, django_assert_max_num_queries) -> None:
    now = timezone.now()  # the season tab is the running season's: make s1 run now, whatever the date
    Season.objects.filter(slug="s1").update(starts_at=now - timedelta(days=30), ends_at=now + timedelta(days=60))
    config_cache_clear()
    client = Client()
    with django_assert_max_num_queries(8):
        response = client.get(BOARD)
    assert response.status_code == 200
    html = response.content.decode()
    assert rows(html) == [
        ["1", "Ana", "500"],
        ["2", "Bo", "400"],
        ["3", "Cyrus", "300"],
        ["4", "Dee", "200"],
        ["5", "Eve", "100"],
    ]
    tabs = re.findall(r'<nav class="tabs".*?</nav>', html, re.S)[0]
    assert re.findall(r">([^<]+)</a>", tabs) == [
        "All time",
        "Today",
        "This week",
        "This month",
        "S1",
    ]  # the season tab names the season
    assert "5 ranked players" in text(html)
    assert 'data-ws="/ws/games/chess/boards/rating/?window=all"' in html
    assert "Sign in" in html and "Your rank" not in html


def test_the_query_count_does_not_grow_with_the_rows(server: SignedClient, game, django_assert_max_num_queries) -> None:
    submit(server, "big", [{"player": f"p{i:03d}", "board": "rating", "score": i} for i in range(100)])
    submit(server, "big2", [{"player": f"q{i:03d}", "board": "rating", "score": 1000 + i} for i in range(100)])
    client = signed_in("p050")
    with django_assert_max_num_queries(14):
        response = client.get(BOARD)
    assert len(rows(response.content.decode())) == 100
    with django_assert_max_num_queries(14):
        assert len(rows(client.get(BOARD + "?page=2").content.decode())) == 100


def test_paging_goes_deeper(server: SignedClient, game) -> None:
    submit(server, "a", [{"player": f"p{i:03d}", "board": "rating", "score": 1000 - i} for i in range(100)])
    submit(server, "b", [{"player": f"q{i:03d}", "board": "rating", "score": 500 - i} for i in range(30)])
    html = Client().get(BOARD + "?page=2").content.decode()
    got = rows(html)
    assert [r[0] for r in got] == [str(r) for r in range(101, 131)]
    assert got[0][1] == "q000"
    assert "page 2 of 2" in text(html) and 'rel="prev"' in html and 'rel="next"' not in html
    assert "Ranks 101–130" in text(html)
    # out-of-range and garbage page numbers are clamped, never an error
    assert Client().get(BOARD + "?page=x").status_code == 200
    assert rows(Client().get(BOARD + "?page=999999").content.decode()) == [["No scores in this window yet."]]


def test_next_100_past_the_offset_pages_goes_on_by_cursor(server: SignedClient, game, monkeypatch) -> None:
    """The offset pages end at rank 10,100 (MAX_PAGE); shrunk here to one page so that 250
    players show the deep pages without loading 10,000. Past it, "Next 100" reads by cursor."""
    monkeypatch.setattr(board_page, "MAX_PAGE", 1)
    for n in range(3):
        submit(
            server,
            f"m{n}",
            [
                {"player": f"p{n}{i:02d}", "board": "rating", "score": 1000 - n * 100 - i}
                for i in range(min(100, 250 - n * 100))
            ],
        )
    html = Client().get(BOARD).content.decode()
    assert [r[0] for r in rows(html)] == [str(r) for r in range(1, 101)]
    seen = [r[1] for r in rows(html)]
    for first, last in ((101, 200), (201, 250)):
        link = re.search(r'<a href="\?([^"]*cursor=[^"]+)" rel="next">Next 100', html)
        assert link, "no Next 100 link"
        html = Client().get(BOARD + "?" + link.group(1).replace("&amp;", "&")).content.decode()
        got = rows(html)
        assert [r[0] for r in got] == [str(r) for r in range(first, last + 1)]
        assert f"ranks {first:,}–{last:,} of 250" in text(html) and 'rel="first"' in html
        seen += [r[1] for r in got]
    assert 'rel="next"' not in html
    assert seen == [f"p{n}{i:02d}" for n in range(3) for i in range(100)][:250]
    # a cursor that is not one the pages handed out reads as the first page
    assert [r[0] for r in rows(Client().get(BOARD + "?cursor=nonsense").content.decode())][:1] == ["1"]


def test_windows_and_unknown_things(ranked) -> None:
    submit(ranked, "old", [{"player": "zed", "board": "rating", "score": 999}], at="2026-11-27T12:00:00Z")
    daily = Client().get(BOARD + "?window=daily:2026-11-27").content.decode()
    assert [r[1] for r in rows(daily)] == ["zed"]
    assert "Day 2026-11-27" in text(daily)
    assert Client().get("/games/chess/boards/nope/").status_code == 404
    assert Client().get("/games/nope/").status_code == 404
    missing = Client().get(BOARD + "?window=hourly")
    assert missing.status_code == 404 and "no window" in missing.content.decode()


def test_a_frozen_window_is_read_from_its_standings(ranked) -> None:
    board = cached_board("chess", board_slug="rating")
    freeze = seasons.window_freeze(board=board, window="daily:2026-11-28", reason="test close")
    assert freeze is not None and freeze.entries == 5
    # a later result reaches the live index but not the frozen standings
    submit(ranked, "late", [{"player": "late", "board": "rating", "score": 9999}])
    html = Client().get(BOARD + "?window=daily:2026-11-28").content.decode()
    assert "Final standings" in html
    assert [r[1] for r in rows(html)] == ["Ana", "Bo", "Cyrus", "Dee", "Eve"]
    assert 'data-live="0"' in html and "live.js" not in html
    # the picker offers it (frozen), and the current page links every earlier retained day
    assert '<option value="daily:2026-11-28" selected>Day 2026-11-28</option>' in html
    assert '<option value="daily:2026-11-28"' in Client().get(BOARD).content.decode()
    me = signed_in("cy").get(BOARD + "?window=daily:2026-11-28").content.decode()
    assert re.search(r'id="my-rank">#3<', me)
    assert [r[1] for r in rows(me, "top-body")][2] == "Cyrus"


def test_search_by_player_id_and_name_prefix(ranked) -> None:
    submit(ranked, "m2", [{"player": "anaconda", "board": "rating", "score": 5, "display_name": "Snake"}])
    html = Client().get(BOARD + "?q=ana").content.decode()
    found = re.findall(r'<ul class="results">(.*?)</ul>', html, re.S)[0]
    # the exact id first, then display names starting with "ana" (any case)
    assert re.findall(r">([^<]+)</a>", found) == ["Ana"]
    html = Client().get(BOARD + "?q=SN").content.decode()
    assert re.findall(r">([^<]+)</a>", re.findall(r'<ul class="results">(.*?)</ul>', html, re.S)[0]) == ["Snake"]
    none = Client().get(BOARD + "?q=%25").content.decode()  # LIKE wildcards are literal
    assert "No player id or name starts with" in none


def test_search_reads_an_index_not_the_table(ranked) -> None:
    """At scale the name search is an index range scan (player_name_prefix), never a scan of
    the game's players: 50k players here, and the plan of the very query the page runs."""
    game_id = Player.objects.values_list("game_id", flat=True).first()
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO scores_player (game_id, external_id, display_name, created_at) "
            "SELECT %s, 'x' || g, md5(g::text), now() FROM generate_series(1, 50000) g",
            [game_id],
        )
        cur.execute("ANALYZE scores_player")
    plan = player_name_matches(game_id, q="an")[: board_page.SEARCH_LIMIT].explain()
    assert "player_name_prefix" in plan and "Seq Scan" not in plan, plan


def test_a_searched_player_is_shown_with_their_neighbours(ranked) -> None:
    html = Client().get(BOARD + "?player=cy").content.decode()
    assert "<h2>Player</h2>" in html
    card = html.split("<h2>Player</h2>", 1)[1].split("</section>", 1)[0]
    assert "#3" in card and [r for r in re.findall(r'<span class="name">([^<]+)</span>', card)] == [
        "Ana",
        "Bo",
        "Cyrus",
        "Dee",
        "Eve",
    ]
    assert "No player nobody" in text(Client().get(BOARD + "?player=nobody").content.decode())


def test_a_signed_in_player_sees_their_rank_card_and_friends(ranked, django_assert_max_num_queries) -> None:
    assert ranked.request("PUT", "/api/v1/games/chess/players/dee/friends", {"friends": ["bo"]}).status_code == 200
    client = signed_in("dee")
    with django_assert_max_num_queries(14):
        html = client.get(BOARD).content.decode()
    assert re.search(r'id="my-rank">#4<', html)
    assert re.search(r'id="my-score">200<', html)
    assert re.search(r'id="my-percentile">40.00<', html)  # ahead of or level with 2 of 5
    around = re.findall(r'<span class="name">([^<]+)</span>', html.split('id="my-card"', 1)[1].split("</section>")[0])
    assert around == ["Bo", "Cyrus", "Dee", "Eve"]
    assert rows(html.split('id="friends"', 1)[1].replace("<tbody>", '<tbody id="f">'), "f") == [
        ["1", "Bo", "400", "#2"],
        ["2", "Dee", "200", "#4"],
    ]
    assert 'data-me="dee"' in html
    assert '<tr data-player="dee" class="me">' in html
    # the chart marks the viewer's score
    assert re.search(r'class="marker-label"[^>]*>you: 200<', html)


def test_the_score_distribution_is_an_inline_svg(ranked) -> None:
    html = Client().get(BOARD).content.decode()
    chart = html.split('class="card chart"', 1)[1].split("</section>", 1)[0]
    assert "<svg" in chart and chart.count("<rect") >= 2
    assert "5 players" in text(chart)


def test_a_player_without_a_score_in_the_window(ranked) -> None:
    submit(ranked, "other", [{"player": "gus", "board": "golf", "score": 70}])
    html = signed_in("gus").get(BOARD).content.decode()
    assert "No score in this window yet." in html
    assert "Neither you nor your friends have a score" in html


def test_sign_in_and_out_with_the_login_form(ranked) -> None:
    signed_in("ana")  # makes the account
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and 'name="password"' in page.content.decode()
    response = client.post("/accounts/login/", {"username": "ana", "password": "pw-pages-1", "next": BOARD})
    assert response.status_code == 302 and response["Location"] == BOARD
    assert re.search(r'id="my-rank">#1<', client.get(BOARD).content.decode())
    wrong = Client().post("/accounts/login/", {"username": "ana", "password": "nope"})
    assert "didn&#x27;t match" in wrong.content.decode() or "didn't match" in wrong.content.decode()
    assert client.post("/accounts/logout/").status_code == 302
    assert "Your rank" not in client.get(BOARD).content.decode()


def test_static_assets_are_served(game) -> None:
    assert Client().get("/static/js/live.js").status_code == 200
    assert Client().get("/static/css/pages.css").status_code == 200


def test_a_deep_rank_is_shown_only_to_the_player_their_friends_and_staff(ranked, monkeypatch) -> None:
    """Like the API's player read: beyond the publicly pageable top, a stranger sees no rank."""
    monkeypatch.setattr(board_page, "PUBLIC_DEPTH", 2)
    assert ranked.request("PUT", "/api/v1/games/chess/players/eve/friends", {"friends": ["bo"]}).status_code == 200
    stranger = Client().get(BOARD + "?player=eve").content.decode()
    assert "only the player and their friends see the exact rank" in stranger and "#5" not in stranger
    assert "#5" in signed_in("bo").get(BOARD + "?player=eve").content.decode()  # a friend
    assert "#5" in signed_in("eve").get(BOARD + "?player=eve").content.decode()  # the player
    assert "#2" in Client().get(BOARD + "?player=bo").content.decode()  # within the public top


def test_the_pages_still_answer_with_redis_down(server: SignedClient, game, throwaway_redis) -> None:
    """Reads fall back to Postgres (boards.selectors): the page says so and still ranks."""
    submit(server, "m1", [{"player": p, "board": "rating", "score": s} for p, s in (("ana", 500), ("bo", 400))])
    client = signed_in("bo")
    throwaway_redis.stop()
    response = client.get(BOARD)
    assert response.status_code == 200
    html = response.content.decode()
    assert "The ranking index is unavailable" in html
    assert [r[1] for r in rows(html)] == ["ana", "bo"]
    assert re.search(r'id="my-rank">#2<', html)
    assert Client().get(BOARD + "?q=an").status_code == 200
