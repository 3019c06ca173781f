"""A board with regional boards (docs/windows.md): the page offers Global and each region, and
the region is carried through the window tabs, paging, the earlier-window picker, search, the
websocket URL and the chart."""

from __future__ import annotations

import html as htmllib
import re

import pytest
from django.test import Client

from scores.models import Board, Region
from scores.selectors import config_cache_clear
from tests.boards.conftest import submit
from tests.conftest import SignedClient
from tests.pages.conftest import BOARD, signed_in
from tests.pages.test_board_pages import rows, text

# the pages after results the real projector process applied (tests/projector.py)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("real_projector")]


@pytest.fixture
def regional(server: SignedClient, game) -> SignedClient:
    """rating keeps regional boards; eu (Paris) and us (New York). All time: ana 500 (eu),
    bo 400 (us), cy 300 (eu)."""
    Region.objects.create(game=game, slug="eu", timezone="Europe/Paris")
    Region.objects.create(game=game, slug="us", timezone="America/New_York")
    Board.objects.filter(game=game, slug="rating").update(regions=True)
    config_cache_clear()
    submit(
        server,
        "m1",
        [
            {"player": "ana", "board": "rating", "score": 500, "display_name": "Ana", "region": "eu"},
            {"player": "bo", "board": "rating", "score": 400, "display_name": "Bo", "region": "us"},
            {"player": "cy", "board": "rating", "score": 300, "display_name": "Cyrus", "region": "eu"},
        ],
    )
    return server


def hrefs(html: str, nav: str) -> dict[str, str]:
    """label -> href of the links in <nav aria-label=nav>."""
    block = re.search(rf'<nav class="[^"]*" aria-label="{nav}">(.*?)</nav>', html, re.S)
    assert block, f"no nav {nav}"
    return {
        label: htmllib.unescape(href)
        for href, label in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', block.group(1))
    }


def test_the_region_picker_and_a_regions_board(regional) -> None:
    glob = Client().get(BOARD).content.decode()
    assert [r[1] for r in rows(glob)] == ["Ana", "Bo", "Cyrus"]
    assert hrefs(glob, "Regions") == {
        "Global": "?window=all",
        "EU": "?window=all&region=eu",
        "US": "?window=all&region=us",
    }
    assert re.search(r'aria-label="Regions">\s*<a href="\?window=all" class="active"', glob)

    eu = Client().get(BOARD + "?region=eu").content.decode()
    assert [r[1] for r in rows(eu)] == ["Ana", "Cyrus"]
    assert "2 ranked players" in text(eu)
    assert 'class="active" aria-current="page">EU<' in eu
    # window tabs, row links and the websocket keep the region
    tabs = hrefs(eu, "Windows")
    assert tabs["Today"] == "?window=daily&region=eu" and tabs["All time"] == "?window=all&region=eu"
    assert 'href="?window=all&amp;region=eu&amp;player=cy"' in eu
    assert 'data-ws="/ws/games/chess/boards/rating/?window=all&amp;region=eu"' in eu
    assert 'data-region="eu"' in eu
    # search and the earlier-window picker submit the region with the window
    for form in re.findall(r'<form method="get" class="(?:past|search)".*?</form>', eu, re.S):
        assert '<input type="hidden" name="region" value="eu">' in form
    # the chart is the region's: 2 players
    chart = eu.split('class="card chart"', 1)[1].split("</section>", 1)[0]
    assert "2 players" in text(chart)

    us = Client().get(BOARD + "?region=us").content.decode()
    assert [r[1] for r in rows(us)] == ["Bo"]


def test_a_regions_windows_roll_over_at_its_own_midnight(regional) -> None:
    # 23:30 UTC on the 27th is already the 28th in Paris
    submit(
        regional, "late", [{"player": "dee", "board": "rating", "score": 50, "region": "eu"}], at="2026-11-27T23:30:00Z"
    )
    eu_day = Client().get(BOARD + "?window=daily:2026-11-28&region=eu").content.decode()
    assert "dee" in [r[1] for r in rows(eu_day)]
    assert "Day 2026-11-28 · EU" in text(eu_day) and "(eu/daily:2026-11-28)" in text(eu_day)
    assert 'data-live="0"' in eu_day  # an earlier window: no websocket
    utc_day = Client().get(BOARD + "?window=daily:2026-11-28").content.decode()
    assert "dee" not in [r[1] for r in rows(utc_day)]
    # the picker lists the region's earlier days without the prefix (the region is its own field)
    assert '<option value="daily:2026-11-28" selected>Day 2026-11-28</option>' in eu_day
    # a window older than the picker's recent days stays selected in it when a link opens it
    old_day = Client().get(BOARD + "?window=daily:2025-03-02&region=eu").content.decode()
    assert '<option value="daily:2025-03-02" selected>Day 2025-03-02</option>' in old_day


def test_paging_keeps_the_region(server: SignedClient, game) -> None:
    Region.objects.create(game=game, slug="eu", timezone="Europe/Paris")
    Board.objects.filter(game=game, slug="rating").update(regions=True)
    config_cache_clear()
    submit(
        server, "a", [{"player": f"p{i:03d}", "board": "rating", "score": 1000 - i, "region": "eu"} for i in range(100)]
    )
    submit(server, "a2", [{"player": "p100", "board": "rating", "score": 900, "region": "eu"}])
    submit(server, "b", [{"player": "global-only", "board": "rating", "score": 5000}])
    page1 = Client().get(BOARD + "?region=eu").content.decode()
    assert 'href="?window=all&amp;region=eu&amp;page=2" rel="next"' in page1
    page2 = Client().get(BOARD + "?window=all&region=eu&page=2").content.decode()
    assert rows(page2) == [["101", "p100", "900"]]


def test_a_signed_in_players_card_is_the_regions(regional) -> None:
    client = signed_in("cy")
    assert re.search(r'id="my-rank">#3<', client.get(BOARD).content.decode())
    eu = client.get(BOARD + "?region=eu").content.decode()
    assert re.search(r'id="my-rank">#2<', eu) and re.search(r'id="my-percentile">50.00<', eu)
    part = client.get(BOARD + "?region=eu&part=rank-card").content.decode()
    assert re.search(r'id="my-rank">#2<', part)


def test_an_unknown_region_or_a_board_without_regions(regional) -> None:
    missing = Client().get(BOARD + "?region=asia")
    assert missing.status_code == 404 and "no region" in missing.content.decode()
    assert Client().get("/games/chess/boards/golf/?region=eu").status_code == 404
    assert 'aria-label="Regions"' not in Client().get("/games/chess/boards/golf/").content.decode()
