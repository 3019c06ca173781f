"""Client addresses through a chain of proxies, on the web stack `make run` starts
(scripts/web.py: nginx, granian): client -> balancer -> nginx -> Django.

The balancer is played by connections from 127.0.0.3, declared in TRUSTED_PROXIES, that send
X-Forwarded-For with the client's address as a balancer appends it; a peer that is no trusted
proxy by connections from 127.0.0.2 (Linux routes all of 127.0.0.0/8 to lo; only 127.0.0.1 and
::1 are trusted without being named). docs/operations.md, "Behind a load balancer"."""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Iterator
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model

from tests.boards.conftest import URL, submit
from tests.conftest import SignedClient
from tests.test_web import nginx_needed, serving

BALANCER = "127.0.0.3"
UNTRUSTED_PEER = "127.0.0.2"
PASSWORD = "the-right-password-1"
THROTTLED = b"Too many failed sign-ins"
WRONG = b"Please enter the correct username and password"
READ_WINDOW_SECONDS = 3600  # THROTTLE_ADDRESS_READS below counts per hour


class Browser:
    """One client: its cookies, the peer it reaches nginx from and the X-Forwarded-For it
    arrives with (a balancer's, or its own writing)."""

    def __init__(self, port: int, peer: str, forwarded: str | None = None, **headers: str) -> None:
        self.port, self.peer, self.forwarded, self.headers = port, peer, forwarded, headers
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10, source_address=(self.peer, 0))
        headers = dict(self.headers)
        if self.forwarded is not None:
            headers["X-Forwarded-For"] = self.forwarded
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            for value in response.headers.get_all("Set-Cookie") or []:
                self.cookies.update({k: m.value for k, m in SimpleCookie(value).items()})
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            conn.close()

    def admin_sign_in(self, username: str, password: str) -> tuple[int, dict[str, str], bytes]:
        status, _, page = self.request("GET", "/admin/login/?next=/admin/")
        assert status == 200, page[:300]
        found = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert found is not None
        form = {"csrfmiddlewaretoken": found.group(1).decode(), "username": username, "password": password}
        return self.request("POST", "/admin/login/?next=/admin/", form)


def signed_in(answer: tuple[int, dict[str, str], bytes]) -> bool:
    status, headers, _ = answer
    return status == 302 and headers.get("location") == "/admin/"


@pytest.fixture
def behind_a_balancer(transactional_db) -> Iterator[int]:
    """make run's web stack with the balancer's address in TRUSTED_PROXIES, and a staff user."""
    nginx_needed()
    get_user_model().objects.create_superuser("mod", "mod@example.com", PASSWORD)
    with serving(
        "nginx", "granian", TRUSTED_PROXIES=BALANCER, THROTTLE_ADDRESS_READS="2/h", THROTTLE_PLAYER_READS="1000/min"
    ) as port:
        yield port


def test_failures_from_one_client_never_lock_the_person_out_behind_a_balancer(behind_a_balancer) -> None:
    port = behind_a_balancer
    guesser = Browser(port, BALANCER, forwarded="198.51.100.7")
    answers = [guesser.admin_sign_in("mod", f"guess-{n}") for n in range(25)]
    assert [status for status, _, _ in answers] == [200] * 25
    assert WRONG in answers[0][2] and THROTTLED in answers[-1][2]
    assert THROTTLED in guesser.admin_sign_in("mod", PASSWORD)[2]  # that client is locked out
    # the person, another client behind the same balancer, signs in
    assert signed_in(Browser(port, BALANCER, forwarded="198.51.100.8").admin_sign_in("mod", PASSWORD))


def test_a_peer_that_is_no_trusted_proxy_cannot_spoof_x_forwarded_for(behind_a_balancer) -> None:
    port = behind_a_balancer
    # it claims to be the person (198.51.100.8) while guessing: its failures are its own
    forger = Browser(port, UNTRUSTED_PEER, forwarded="198.51.100.8")
    for n in range(5):
        forger.admin_sign_in("mod", f"guess-{n}")
    assert THROTTLED in forger.admin_sign_in("mod", PASSWORD)[2]
    assert THROTTLED in Browser(port, UNTRUSTED_PEER, forwarded="192.0.2.44").admin_sign_in("mod", PASSWORD)[2]
    assert signed_in(Browser(port, BALANCER, forwarded="198.51.100.8").admin_sign_in("mod", PASSWORD))


def _reads(port: int, token: str, clients: dict[str, str]) -> dict[str, list[int]]:
    """Each (name: "peer forwarded") client's read statuses, in the order given; the same player
    token for all (its own limit is far off)."""
    path = f"{URL}/boards/rating/players/p1"
    statuses: dict[str, list[int]] = {}
    for name, how in clients.items():
        peer, _, forwarded = how.partition(" ")
        browser = Browser(port, peer, forwarded=forwarded or None, Authorization=f"Bearer {token}")
        statuses.setdefault(name.split("#")[0], []).append(browser.request("GET", path)[0])
    return statuses


def test_read_limits_count_each_client_behind_the_balancer_on_its_own(behind_a_balancer, server: SignedClient) -> None:
    port = behind_a_balancer
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 500}])
    answer = server.post(f"{URL}/players/p1/token")
    assert answer.status_code == 200, answer.content
    token = answer.json()["token"]
    for round_ in range(2):  # a round that straddles the limit's window is run again, once
        started = time.time() // READ_WINDOW_SECONDS
        x, y = f"198.51.100.{10 + round_}", f"198.51.100.{20 + round_}"
        seen = _reads(
            port,
            token,
            {
                "x#1": f"{BALANCER} {x}",
                "x#2": f"{BALANCER} {x}",
                "x#3": f"{BALANCER} {x}",
                # forging x's address from a peer that is no trusted proxy: counted as that peer
                f"forger#{round_}": f"{UNTRUSTED_PEER} {x}",
                "y#1": f"{BALANCER} {y}",
                "y#2": f"{BALANCER} 192.0.2.1, {y}",  # what y wrote left of the balancer's entry is ignored
            },
        )
        if time.time() // READ_WINDOW_SECONDS == started:
            break
    assert seen["x"] == [200, 200, 429]
    assert seen["y"] == [200, 200]
    assert seen["forger"] == [200]
