"""A board page's extras (docs/players.md): season names and dates, the countdown to the window's
reset, the top three, search hits with rank and score, "go to my rank", the order of the
sections on a phone, the chart's age and reach."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from pages.periods import countdown, reset_of, window_dates
from scores.models import Season
from scores.selectors import cached_board
from scores.windows import SeasonSpan
from tests.boards.conftest import submit
from tests.pages.conftest import BOARD, signed_in
from tests.pages.test_board_pages import rows, text

# the pages after results the real projector process applied (tests/projector.py)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("real_projector")]


def now_iso(seconds_ago: int = 5) -> str:
    return (timezone.now() - timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")


def test_window_dates_and_the_reset_in_the_boards_time_zone() -> None:
    seasons = (SeasonSpan("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC)),)
    assert window_dates("daily:2026-11-28", "UTC", seasons) == "28 Nov 2026"
    assert window_dates("weekly:2026-W48", "UTC", seasons) == "23 Nov – 29 Nov 2026"
    assert window_dates("season:s1", "UTC", seasons) == "1 Nov 2026 – 1 Feb 2027"
    assert window_dates("season:s1", "Europe/Paris", seasons) == "1 Nov 2026, 01:00 – 1 Feb 2027, 01:00"
    assert window_dates("all", "UTC", seasons) == ""
    now = datetime(2026, 11, 28, 18, 47, 30, tzinfo=UTC)
    paris = reset_of("daily:2026-11-28", "Europe/Paris", seasons, now)
    assert paris.at == datetime(2026, 11, 28, 23, 0, tzinfo=UTC)  # local midnight in Paris
    assert (paris.verb, paris.local, paris.left) == ("Resets", "00:00 Europe/Paris", "4 h 12 min 30 s")
    season = reset_of("season:s1", "UTC", seasons, now)
    assert season.verb == "Ends" and season.left == "64 d 5 h"
    assert reset_of("all", "UTC", seasons, now) is None
    assert countdown(61) == "1 min 01 s" and countdown(9) == "9 s"


def test_the_season_tab_and_heading_name_the_season_with_its_dates(ranked) -> None:
    # running now, whatever today's date (the page names the current season only)
    today = timezone.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    starts, ends = today - timedelta(days=30), today + timedelta(days=60)
    Season.objects.filter(slug="s1").update(name="Winter Cup", starts_at=starts, ends_at=ends)
    from scores.selectors import config_cache_clear

    config_cache_clear()
    html = Client().get(BOARD + "?window=season").content.decode()
    assert re.search(r'class="active" aria-current="page">Winter Cup<', html)
    line = text(html.split('id="window-line"', 1)[1].split("</p>", 1)[0])
    span = f"{starts.day} {starts:%b %Y} – {ends.day} {ends:%b %Y}"
    assert "Winter Cup" in line and span in line and "(season:s1)" in line
    reset = text(html.split('id="reset"', 1)[1].split("</p>", 1)[0])
    assert "Ends in" in reset and f"{ends.day} {ends:%b %Y}" in reset
    daily = Client().get(BOARD + "?window=daily").content.decode()
    assert re.search(r'id="reset" data-at="[0-9T:-]+Z" data-verb="Resets">Resets in <strong id="countdown">', daily)
    assert "at 00:00 UTC" in text(daily)
    # an earlier or all-time window has no countdown
    assert 'id="reset"' not in Client().get(BOARD).content.decode()


def test_the_header_count_says_what_it_counts(ranked) -> None:
    sub = text(Client().get(BOARD).content.decode())
    assert "5 ranked players: everyone with a score in this window, counted live" in sub


def test_the_top_three_are_marked(ranked) -> None:
    html = Client().get(BOARD).content.decode()
    marked = re.findall(r'<tr data-player="(\w+)" class="top top-(\d)">', html)
    assert marked == [("ana", "1"), ("bo", "2"), ("cy", "3")]
    assert '<tr data-player="dee">' in html and 'title="1st place"' in html


def test_search_hits_carry_rank_and_score_and_say_when_cut(server, game) -> None:
    submit(
        server,
        "many",
        [
            {"player": f"an{i:02d}", "board": "rating", "score": 100 + i, "display_name": f"Ann {i:02d}"}
            for i in range(25)
        ],
    )
    html = Client().get(BOARD + "?q=ann").content.decode()
    assert "The first 20 of 25 players whose id or name starts with “ann”" in text(html)
    hits = re.findall(
        r'<li><span class="hit-who"><a [^>]*>([^<]+)</a>.*?class="hit-rank">#(\d+)</span> <span class="hit-score">(\d+)<',
        html,
    )
    assert len(hits) == 20 and hits[0] == ("Ann 00", "25", "100")
    one = Client().get(BOARD + "?q=an24").content.decode()
    assert "1 player whose id or name starts with “an24”" in text(one)
    assert re.search(r'class="hit-rank">#1</span> <span class="hit-score">124<', one)


def test_go_to_my_rank_opens_the_page_holding_it(server, game) -> None:
    submit(server, "big", [{"player": f"p{i:03d}", "board": "rating", "score": 1000 - i} for i in range(100)])
    submit(server, "big2", [{"player": f"p{i:03d}", "board": "rating", "score": 1000 - i} for i in range(100, 150)])
    client = signed_in("p120")  # rank 121: page 2
    html = client.get(BOARD).content.decode()
    link = re.search(r'<a id="goto-me" href="([^"]+)">Go to my rank \(#121\)</a>', html)
    assert link, "no go-to-my-rank link"
    page = client.get(BOARD + link.group(1).replace("&amp;", "&").split("#")[0]).content.decode()
    assert link.group(1).endswith("page=2#me")
    assert '<tr data-player="p120" class="me"><td class="rank" id="me">121<' in page


def test_on_a_phone_the_card_and_friends_come_before_the_long_table(ranked) -> None:
    assert ranked.request("PUT", "/api/v1/games/chess/players/dee/friends", {"friends": ["bo"]}).status_code == 200
    html = signed_in("dee").get(BOARD).content.decode()
    # one column below 900 px: document order is the order on a phone
    assert html.index('id="my-card"') < html.index('id="friends"') < html.index('id="top"')
    anonymous = Client().get(BOARD).content.decode()
    assert anonymous.index('id="sign-in-prompt"') < anonymous.index('id="top"')


def test_the_chart_states_its_age_and_reaches_the_live_leader(ranked) -> None:
    from boards.histogram import histogram_build

    board = cached_board("chess", board_slug="rating")
    histogram_build(board, "all")  # as beat does, then a new leader arrives
    submit(ranked, "later", [{"player": "zed", "board": "rating", "score": 9000}], at="2026-11-28T13:00:00Z")
    html = Client().get(BOARD).content.decode()
    age = text(html.split('id="chart-age"', 1)[1].split("</p>", 1)[0])
    assert "5 players" in age and "as of" in age and "(just now)" in age and "can trail the live count" in age
    assert "6 ranked players" in text(html)  # the live count, beside the chart's five
    assert 'id="best-marker"' in html and "#1 now" in html
    assert re.search(r'data-hi="9000"', html)
    assert rows(html)[0][1] == "zed"
