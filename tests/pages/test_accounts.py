"""Site logins for players: one-time login links made with a game's server key, and the demo
players' accounts (scores/accounts.py)."""

from __future__ import annotations

import re
import threading
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from scores import accounts
from scores.models import LoginLinkUse, Player, PlayerAccount
from tests.conftest import SignedClient
from tests.factories import GameFactory, PlayerFactory, server_key
from tests.pages.conftest import BOARD, signed_in

# the pages after results the real projector process applied (tests/projector.py)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("real_projector")]

LINK = "/api/v1/games/chess/players/{}/login-link"


def make_link(server: SignedClient, player: str, query: str = "") -> str:
    """A link, as a game's server asks for one. `query`: a nonce that makes two requests for the
    same player within one second two requests, not one sent twice (docs/api.md §3.1)."""
    response = server.post(LINK.format(player) + query)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"url", "expires_at"}
    assert body["url"].startswith("http://testserver/login-link/")
    return urlsplit(body["url"]).path


def state() -> tuple[int, int, int]:
    return get_user_model().objects.count(), PlayerAccount.objects.count(), LoginLinkUse.objects.count()


def test_a_login_link_signs_a_new_visitor_in_as_the_player_once(ranked) -> None:
    path = make_link(ranked, "cy")
    browser = Client()
    confirm = browser.get(path)
    assert confirm.status_code == 200
    assert "signs you in as <strong>Cyrus</strong>" in confirm.content.decode()
    assert state() == (0, 0, 0)  # showing the page changes nothing

    redeemed = browser.post(path)
    assert redeemed.status_code == 302 and redeemed["Location"] == "/games/chess/boards/rating/"
    assert re.search(r'id="my-rank">#3<', browser.get(BOARD).content.decode())
    account = PlayerAccount.objects.select_related("user", "player").get()
    assert account.player.external_id == "cy" and not account.user.has_usable_password()

    before = state()
    again = Client().post(path)
    assert again.status_code == 409 and 'data-code="used"' in again.content.decode()
    assert state() == before


def test_a_second_link_signs_in_the_same_user(ranked) -> None:
    Client().post(make_link(ranked, "cy"))
    other = Client()
    assert other.post(make_link(ranked, "cy", query="?nonce=2")).status_code == 302
    assert get_user_model().objects.count() == 1
    assert "Signed in as" in other.get(BOARD).content.decode()


def test_a_signed_in_user_links_their_account_to_the_player(ranked) -> None:
    user = get_user_model().objects.create_user(username="someone", password="pw-pages-1")
    browser = Client()
    browser.force_login(user)
    path = make_link(ranked, "bo")
    assert "your account will play as this player" in browser.get(path).content.decode()
    assert browser.post(path).status_code == 302
    assert PlayerAccount.objects.get(user=user).player.external_id == "bo"
    # the same user cannot take a second player of the game; nothing changes
    before = state()
    refused = browser.post(make_link(ranked, "eve"))
    assert refused.status_code == 409 and 'data-code="conflict"' in refused.content.decode()
    assert state() == before


def test_a_player_already_linked_to_someone_else_is_refused(ranked) -> None:
    signed_in("bo")  # bo's own login
    user = get_user_model().objects.create_user(username="intruder", password="pw-pages-1")
    browser = Client()
    browser.force_login(user)
    before = state()
    assert browser.post(make_link(ranked, "bo")).status_code == 409
    assert state() == before


def test_expired_tampered_and_unknown_links(ranked) -> None:
    player = Player.objects.get(external_id="ana")
    expired = accounts.login_link_create(player=player, ttl_seconds=-1)
    for token, code in ((expired.token, "expired"), (expired.token[:-2] + "xx", "invalid"), ("garbage", "invalid")):
        for method in ("get", "post"):
            response = getattr(Client(), method)(f"/login-link/{token}/")
            assert response.status_code == 400
            assert f'data-code="{code}"' in response.content.decode()
    assert state() == (0, 0, 0)


def test_the_link_endpoint_needs_a_signed_request_of_the_game(ranked) -> None:
    assert Client().post(LINK.format("ana")).status_code == 401
    assert ranked.post(LINK.format("nobody")).status_code == 404
    assert ranked.post(LINK.format("nobody")).json()["error"]["code"] == "unknown_player"
    other = GameFactory(slug="other")
    key, secret = server_key(other)
    assert SignedClient(key.key_id, secret).post(LINK.format("ana")).status_code == 403


def test_two_browsers_racing_with_one_link_sign_in_once(ranked) -> None:
    """Single use is a primary-key insert: of two concurrent redemptions exactly one wins."""
    path = make_link(ranked, "dee")
    token = path.split("/")[2]
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def redeem() -> None:
        try:
            barrier.wait()
            accounts.login_link_redeem(token=token, user=None)
            outcomes.append("ok")
        except accounts.LoginLinkError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=redeem) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(outcomes) == ["ok", "used"]
    assert LoginLinkUse.objects.count() == 1 and PlayerAccount.objects.count() == 1


def test_demo_accounts_are_made_set_based_and_idempotently(game) -> None:
    for i in range(1, 6):
        PlayerFactory(game=game, external_id=f"player-{i:06d}")
    assert accounts.demo_accounts_missing(game_id=game.id)
    assert accounts.demo_accounts_create(game_id=game.id) == 5
    assert accounts.demo_accounts_create(game_id=game.id) == 0
    assert not accounts.demo_accounts_missing(game_id=game.id)
    browser = Client()
    assert browser.login(username="player-000003", password=accounts.DEMO_PASSWORD)
    assert PlayerAccount.objects.get(user__username="player-000003").player.external_id == "player-000003"
    # one password hash for all of them: computed once, not per user
    assert get_user_model().objects.values("password").distinct().count() == 1


def test_the_login_page_documents_the_demo_sign_in(game) -> None:
    assert "demo-signin" not in Client().get("/accounts/login/").content.decode()
    GameFactory(slug="demo")
    html = Client().get("/accounts/login/").content.decode()
    assert "player-000001" in html and "<code>demo</code>" in html


# --- players only: never a staff account (docs/players.md, "One-time login links") ----------


def staff_user(kind: str):  # noqa: ANN201 (a user)
    User = get_user_model()
    if kind == "superuser":
        return User.objects.create_superuser(username="root", password="pw-pages-1")
    return User.objects.create_user(username="mod", password="pw-pages-1", is_staff=True)


def opens_the_admin(browser: Client) -> bool:
    response = browser.get("/admin/")
    if response.status_code == 302:
        assert response["Location"].startswith("/admin/login/")
        return False
    return response.status_code == 200


@pytest.mark.parametrize("kind", ["staff", "superuser"])
def test_a_link_for_a_player_linked_to_a_staff_account_never_yields_a_staff_session(ranked, kind) -> None:
    """A link made before this rule (or an account promoted since) links the player to a staff
    user: redeeming a link for that player is refused, and the browser cannot open the admin."""
    staff = staff_user(kind)
    cy = Player.objects.get(external_id="cy")
    PlayerAccount.objects.create(user=staff, game_id=cy.game_id, player=cy)  # as the old redemption made it
    path = make_link(ranked, "cy")
    browser = Client()
    assert "players only" in browser.get(path).content.decode()
    before = state()
    refused = browser.post(path)
    assert refused.status_code == 403
    html = refused.content.decode()
    assert 'data-code="staff"' in html and "never signs anyone in as staff" in html
    assert "_auth_user_id" not in browser.session
    assert not opens_the_admin(browser)
    assert state() == before  # not used up, nothing linked


@pytest.mark.parametrize("kind", ["staff", "superuser"])
def test_a_signed_in_staff_user_is_never_linked_to_a_player(ranked, kind) -> None:
    staff = staff_user(kind)
    browser = Client()
    browser.force_login(staff)
    path = make_link(ranked, "bo")
    shown = browser.get(path)
    html = shown.content.decode()
    assert 'data-code="staff"' in html and "Sign out" in html and ">Continue<" not in html
    before = state()
    refused = browser.post(path)
    assert refused.status_code == 403 and 'data-code="staff"' in refused.content.decode()
    assert state() == before and not PlayerAccount.objects.filter(user=staff).exists()
    # signed out, the same link signs the visitor in as the player, who cannot open the admin
    browser.logout()
    assert browser.post(path).status_code == 302
    assert PlayerAccount.objects.get(player__external_id="bo").user != staff
    assert not opens_the_admin(browser)
