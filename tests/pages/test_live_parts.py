"""`?part=rank-card`: the signed-in player's rank card and friends' board as a fragment, which
static/js/live.js swaps in when a websocket `rank` or `passed` message arrives."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from boards.profiles import local_caches_clear
from tests.boards.conftest import submit
from tests.pages.conftest import BOARD, signed_in
from tests.pages.test_board_pages import rows

# the pages after results the real projector process applied (tests/projector.py)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("real_projector")]

PART = BOARD + "?part=rank-card"


def card_names(html: str) -> list[str]:
    card = html.split('id="my-card"', 1)[1].split("</section>", 1)[0]
    return re.findall(r'<span class="name">([^<]+)</span>', card)


def friends(html: str) -> list[list[str]]:
    return rows(html.split('id="friends"', 1)[1].replace("<tbody>", '<tbody id="f">', 1), "f")


def test_the_fragment_is_the_players_card_and_friends_as_the_page_renders_them(ranked) -> None:
    assert ranked.request("PUT", "/api/v1/games/chess/players/dee/friends", {"friends": ["bo"]}).status_code == 200
    client = signed_in("dee")
    page = client.get(BOARD).content.decode()
    part = client.get(PART)
    assert part.status_code == 200
    assert part["Cache-Control"] == "private, no-store"
    html = part.content.decode()
    assert "<html" not in html and 'id="top-body"' not in html  # a fragment, not the page
    assert re.search(r'id="my-rank">#4<', html) and re.search(r'id="my-percentile">40.00<', html)
    assert card_names(html) == card_names(page) == ["Bo", "Cyrus", "Dee", "Eve"]
    assert friends(html) == friends(page) == [["1", "Bo", "400", "#2"], ["2", "Dee", "200", "#4"]]

    # after a result the fragment has the new percentile and neighbours: what live.js swaps in
    submit(ranked, "m2", [{"player": "dee", "board": "rating", "score": 450}])
    html = client.get(PART).content.decode()
    assert re.search(r'id="my-rank">#2<', html)
    assert re.search(r'id="my-percentile">80.00<', html)  # ahead of or level with 4 of 5
    assert card_names(html) == ["Ana", "Dee", "Bo", "Cyrus"]
    assert friends(html) == [["1", "Dee", "450", "#2"], ["2", "Bo", "400", "#3"]]


def test_the_fragment_is_only_ever_the_session_players_own(ranked) -> None:
    # anonymous: nothing, whoever the query names
    for url in (PART, PART + "&player=ana", PART + "&player=dee"):
        response = Client().get(url)
        assert response.status_code == 204 and response.content == b""
    # signed in: their own card, never the one a ?player= names
    html = signed_in("dee").get(PART + "&player=ana").content.decode()
    assert 'data-rank="4"' in html and "Your rank" in html
    assert html.count('class="card standing') == 1
    # a signed-in user who plays no player of this game: nothing either
    from django.contrib.auth import get_user_model

    outsider = Client()
    outsider.force_login(get_user_model().objects.create_user(username="outsider", password="x-pw-1"))
    assert outsider.get(PART).status_code == 204


def test_the_fragment_costs_a_fixed_handful_of_queries(server, game, django_assert_max_num_queries) -> None:
    submit(server, "big", [{"player": f"p{i:03d}", "board": "rating", "score": i} for i in range(100)])
    friends_of = {"friends": [f"p{i:03d}" for i in range(1, 100, 2)]}
    assert server.request("PUT", "/api/v1/games/chess/players/p050/friends", friends_of).status_code == 200
    client = signed_in("p050")
    client.get(PART)  # warm the per-process config cache, as a running process has it
    local_caches_clear()  # but not the profile and friend caches: the cold case
    # session, user, the viewer's player, friends, the card's and the friends' profiles
    with django_assert_max_num_queries(6):
        response = client.get(PART)
    assert len(friends(response.content.decode())) == 51


def test_unknown_windows_and_regions_are_404_for_the_fragment_too(ranked) -> None:
    client = signed_in("dee")
    assert client.get(PART + "&window=hourly").status_code == 404
    assert client.get(PART + "&region=eu").status_code == 404
    # an earlier window the index still keeps (the results are from 2026-11-28)
    assert re.search(r'id="my-rank">#4<', client.get(PART + "&window=daily:2026-11-28").content.decode())
