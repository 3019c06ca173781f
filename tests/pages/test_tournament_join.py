"""The tournament box's join button on a board page (docs/competitions.md, "On the pages"): a
plain form posting to the pages, CSRF-checked, joining through the API's service, then back to
the board page saying joined, full or closed in words. Dates are relative to now on purpose: a
tournament's state is decided by the clock the page reads."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from competitions.models import TournamentEntry, TournamentSize
from scores.models import Board
from scores.selectors import config_cache_clear
from tests.factories import GameFactory, PlayerFactory, tournament_board
from tests.pages.conftest import signed_in

CUP = "/games/arena/boards/cup/"
JOIN = "/games/arena/boards/cup/join/"


@pytest.fixture
def cup(transactional_db) -> Board:
    now = timezone.now()
    game = GameFactory(slug="arena", name="Arena")
    for name in ("ana", "bo", "cy"):
        PlayerFactory(game=game, external_id=name)
    board = tournament_board(
        game,
        starts_at=now - timedelta(days=1),
        ends_at=now + timedelta(days=1),
        board={"name": "Winter Cup"},
        join_required=True,
        max_size=2,
    )
    return board


def _box(client: Client) -> str:
    page = client.get(CUP)
    assert page.status_code == 200
    html = page.content.decode()
    return html[html.index('id="tournament"') : html.index("</section>", html.index('id="tournament"'))]


def test_a_signed_in_player_joins_with_the_button_and_is_told_so(cup) -> None:
    ana = signed_in("ana")
    box = _box(ana)
    assert 'id="join-button"' in box and "Join Winter Cup" in box and "2 places left" in box
    assert "you have not joined" in box

    r = ana.post(JOIN)
    assert r.status_code == 303 and r["Location"] == CUP + "#tournament"
    assert list(TournamentEntry.objects.values_list("player__external_id", flat=True)) == ["ana"]
    box = _box(ana)
    assert "You joined Winter Cup: 1 of 2 joined." in box
    assert "you joined" in box and 'id="join-button"' not in box
    assert "You joined" not in _box(ana)  # said once, not on every later page

    assert ana.post(JOIN).status_code == 303  # twice is harmless
    assert "You are already in Winter Cup (1 of 2 joined)." in _box(ana)
    assert TournamentSize.objects.get().size == 1


def test_a_full_tournament_says_so_and_a_late_join_is_refused_in_words(cup) -> None:
    ana, bo, cy = signed_in("ana"), signed_in("bo"), signed_in("cy")
    page_of_cy = _box(cy)  # cy sees the button while a place is left...
    assert 'id="join-button"' in page_of_cy
    assert ana.post(JOIN).status_code == 303 and bo.post(JOIN).status_code == 303
    box = _box(cy)  # ...and the full state once the places are taken
    assert "Full: all 2 places are taken" in box and 'id="join-button"' not in box
    cy.post(JOIN)  # a form rendered before it filled up
    assert "Winter Cup is full: all 2 places are taken." in _box(cy)
    assert TournamentSize.objects.get().size == 2 and TournamentEntry.objects.count() == 2


def test_an_ended_tournament_is_closed_to_joins(cup) -> None:
    ana = signed_in("ana")
    now = timezone.now()
    Board.objects.filter(pk=cup.pk).update(
        tournament={**cup.tournament, "ends_at": (now - timedelta(minutes=1)).isoformat()}
    )
    config_cache_clear()
    box = _box(ana)
    assert "Joining is closed: this tournament has ended." in box and 'id="join-button"' not in box
    ana.post(JOIN)
    assert "Winter Cup has ended: joining is closed." in _box(ana)
    assert not TournamentEntry.objects.exists()


def test_the_join_form_needs_its_csrf_token_and_a_signed_in_player(cup) -> None:
    ana = signed_in("ana")
    strict = Client(enforce_csrf_checks=True)
    strict.cookies = ana.cookies  # the same session, without the form's token
    assert strict.post(JOIN).status_code == 403
    assert not TournamentEntry.objects.exists()

    # with the token the page's form carries, the same post joins
    page = strict.get(CUP).content.decode()
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    assert strict.post(JOIN, {"csrfmiddlewaretoken": token}).status_code == 303
    assert TournamentEntry.objects.count() == 1

    anonymous = Client()
    assert "Sign in</a> to join this tournament." in _box(anonymous)
    r = anonymous.post(JOIN)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/?next=")
    assert anonymous.get(JOIN).status_code == 405  # a GET never joins

    user = get_user_model().objects.create_user(username="watcher", password="pw-pages-1")
    watcher = Client()
    watcher.force_login(user)  # an account with no player in this game
    watcher.post(JOIN)
    assert "Your account does not play this game" in _box(watcher)
    assert TournamentEntry.objects.count() == 1
    assert Client().post("/games/arena/boards/nope/join/").status_code == 404
