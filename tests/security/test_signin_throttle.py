"""Password guessing against the admin's sign-in (and the player pages' one) is throttled
(leaderboard_project/security.py): after SIGNIN_FAILURES_PER_USER failures an account refuses
every password, the right one too, until the window ends, and the form says why."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

PASSWORD = "the-right-password-1"


@pytest.fixture
def moderator(db):
    return get_user_model().objects.create_superuser("mod", "mod@example.com", PASSWORD)


def _admin_login(client: Client, password: str, username: str = "mod", address: str = "10.0.0.1"):
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
    )


def test_a_brute_force_on_the_admin_locks_the_account_and_the_right_password_then_fails_too(
    moderator, settings
) -> None:
    client = Client()
    for guess in range(settings.SIGNIN_FAILURES_PER_USER):
        answer = _admin_login(client, f"guess-{guess}")
        assert answer.status_code == 200 and b"Too many failed" not in answer.content
    locked = _admin_login(client, PASSWORD)
    assert locked.status_code == 200 and b"Too many failed sign-ins" in locked.content
    assert "_auth_user_id" not in client.session
    # from another address too: the account is what is locked
    assert b"Too many failed" in _admin_login(Client(), PASSWORD, address="10.0.0.2").content
    cache.clear()  # the window ended
    ok = _admin_login(client, PASSWORD)
    assert ok.status_code == 302 and ok["Location"] == "/admin/"


def test_one_address_guessing_many_accounts_is_stopped(moderator, settings) -> None:
    settings.SIGNIN_FAILURES_PER_ADDRESS = 6
    client = Client()
    for n in range(6):
        _admin_login(client, "wrong", username=f"user{n}", address="10.0.0.9")
    assert b"Too many failed" in _admin_login(client, PASSWORD, address="10.0.0.9").content
    assert _admin_login(Client(), PASSWORD, address="10.0.0.10").status_code == 302  # others unaffected


def test_the_player_sign_in_page_is_throttled_too(moderator, settings) -> None:
    client = Client()
    for _ in range(settings.SIGNIN_FAILURES_PER_USER):
        client.post("/accounts/login/", {"username": "mod", "password": "nope"}, REMOTE_ADDR="10.0.1.1")
    page = client.post("/accounts/login/", {"username": "mod", "password": PASSWORD}, REMOTE_ADDR="10.0.1.1")
    assert page.status_code == 200 and b"Too many failed sign-ins" in page.content
