"""Password guessing against the admin's sign-in (and the player pages' one) is throttled
(leaderboard_project/security.py, django-axes; docs/operations.md "Sign-in throttling"): after
SIGNIN_FAILURES_PER_USER failures for one account from one client address, or
SIGNIN_FAILURES_PER_ADDRESS from one address, that address's attempts are refused (the right
password too) and the form says why; failures from one address never keep the right password
from working from another."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.db.models import F
from django.test import Client

from leaderboard_project.proxies import trusted_proxies_parse

PASSWORD = "the-right-password-1"
THROTTLED = b"Too many failed sign-ins. Wait 15 minutes and try again."
WRONG = b"Please enter the correct username and password"


@pytest.fixture
def moderator(db):
    return get_user_model().objects.create_superuser("mod", "mod@example.com", PASSWORD)


def _admin_login(client: Client, password: str, username: str = "mod", address: str = "10.0.0.1", **headers: str):
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        **headers,
    )


def _signed_in(answer) -> bool:
    return answer.status_code == 302 and answer["Location"] == "/admin/"


def test_a_brute_force_locks_the_account_at_that_address_only(moderator, settings) -> None:
    client = Client()
    for guess in range(settings.SIGNIN_FAILURES_PER_USER - 1):
        answer = _admin_login(client, f"guess-{guess}")
        assert answer.status_code == 200 and WRONG in answer.content and THROTTLED not in answer.content
    # the failure that reaches the limit already says so
    reached = _admin_login(client, "guess-last")
    assert reached.status_code == 200 and THROTTLED in reached.content
    locked = _admin_login(client, PASSWORD)
    assert locked.status_code == 200 and THROTTLED in locked.content
    assert "_auth_user_id" not in client.session
    # the person, from anywhere else, signs in
    assert _signed_in(_admin_login(Client(), PASSWORD, address="10.0.0.2"))


def test_twenty_five_failures_from_one_address_never_lock_the_person_out(moderator) -> None:
    stranger = Client()
    for guess in range(25):
        assert _admin_login(stranger, f"guess-{guess}", address="203.0.113.66").status_code == 200
    assert THROTTLED in _admin_login(stranger, PASSWORD, address="203.0.113.66").content
    assert _signed_in(_admin_login(Client(), PASSWORD, address="198.51.100.20"))


def test_one_address_guessing_many_accounts_is_stopped(moderator, settings) -> None:
    settings.SIGNIN_FAILURES_PER_ADDRESS = 6
    client = Client()
    for n in range(6):  # one failure per account: no account reaches its own limit
        _admin_login(client, "wrong", username=f"user{n}", address="10.0.0.9")
    assert THROTTLED in _admin_login(client, PASSWORD, address="10.0.0.9").content
    assert _signed_in(_admin_login(Client(), PASSWORD, address="10.0.0.10"))  # others unaffected


def test_the_lock_out_ends_its_window_after_the_last_counted_failure(moderator, settings) -> None:
    client = Client()
    for guess in range(settings.SIGNIN_FAILURES_PER_USER):
        _admin_login(client, f"guess-{guess}")
    # attempts while locked out are refused before the password is tried and not counted, so
    # they never push the end further
    for _ in range(3):
        assert THROTTLED in _admin_login(client, PASSWORD).content
    counted = AccessAttempt.objects.get(username="mod", ip_address="10.0.0.1")
    assert counted.failures_since_start == settings.SIGNIN_FAILURES_PER_USER
    # the window passes: the failures are as old as SIGNIN_THROTTLE_SECONDS
    window = timedelta(seconds=settings.SIGNIN_THROTTLE_SECONDS)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - window)
    assert _signed_in(_admin_login(client, PASSWORD))


def test_behind_a_trusted_proxy_each_forwarded_client_counts_on_its_own(moderator, settings) -> None:
    settings.TRUSTED_PROXIES = trusted_proxies_parse("10.20.0.0/16")
    balancer = "10.20.0.4"
    client = Client()
    for guess in range(25):
        _admin_login(client, f"guess-{guess}", address=balancer, HTTP_X_FORWARDED_FOR="203.0.113.66")
    assert THROTTLED in _admin_login(client, PASSWORD, address=balancer, HTTP_X_FORWARDED_FOR="203.0.113.66").content
    # another client through the same balancer, even one that writes the guesser's address
    # first (a forgery sits left of what the balancer appended)
    assert _signed_in(_admin_login(Client(), PASSWORD, address=balancer, HTTP_X_FORWARDED_FOR="198.51.100.20"))
    forged = _admin_login(Client(), PASSWORD, address=balancer, HTTP_X_FORWARDED_FOR="203.0.113.66, 198.51.100.21")
    assert _signed_in(forged)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.66"}


def test_a_peer_that_is_no_trusted_proxy_cannot_pick_its_address(moderator, settings) -> None:
    settings.TRUSTED_PROXIES = trusted_proxies_parse("10.20.0.0/16")
    client = Client()
    for guess in range(settings.SIGNIN_FAILURES_PER_USER):
        _admin_login(client, f"g{guess}", address="203.0.113.66", HTTP_X_FORWARDED_FOR=f"198.51.100.{guess}")
    assert THROTTLED in _admin_login(client, PASSWORD, address="203.0.113.66", HTTP_X_FORWARDED_FOR="192.0.2.1").content
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.66"}


def test_the_player_sign_in_page_is_throttled_too(moderator, settings) -> None:
    client = Client()
    for _ in range(settings.SIGNIN_FAILURES_PER_USER):
        client.post("/accounts/login/", {"username": "mod", "password": "nope"}, REMOTE_ADDR="10.0.1.1")
    page = client.post("/accounts/login/", {"username": "mod", "password": PASSWORD}, REMOTE_ADDR="10.0.1.1")
    assert page.status_code == 200 and THROTTLED in page.content


def test_a_redis_outage_changes_nothing(moderator, settings, throwaway_redis) -> None:
    """The failures are counted in Postgres: with the cache unreachable the throttle still
    counts, and the right password still works from another address."""
    throwaway_redis.stop()
    client = Client()
    for guess in range(settings.SIGNIN_FAILURES_PER_USER):
        _admin_login(client, f"guess-{guess}")
    assert THROTTLED in _admin_login(client, PASSWORD).content
    assert _signed_in(_admin_login(Client(), PASSWORD, address="10.0.0.2"))


def test_a_sign_in_without_a_request_is_checked_but_not_counted(moderator) -> None:
    """manage.py shell, the test client's login(): no client address, no stranger."""
    assert not Client().login(username="mod", password="wrong")
    assert Client().login(username="mod", password=PASSWORD)
    assert not AccessAttempt.objects.exists()
