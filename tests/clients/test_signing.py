"""One signer on the client side (leaderboard_client.sign, clients/python/; docs/clients.md),
one verifier on the server (scores/auth.py): what the one signs, the other accepts, and a change
to any signed part is refused."""

from __future__ import annotations

import time

import pytest
from django.test import RequestFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leaderboard_client import sign, signed_headers
from rest_framework import exceptions
from rest_framework.request import Request

from scores.auth import ServerKeyAuthentication
from scores.models import Game
from tests.conftest import SignedClient
from tests.factories import server_key

PATHS = st.builds(
    lambda game, rest, query: f"/api/v1/games/{game}/{rest}" + (f"?{query}" if query else ""),
    st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True),
    st.from_regex(r"(?:[A-Za-z0-9_.:@/-]|%[0-9A-F]{2}){0,30}", fullmatch=True),
    st.from_regex(r"(?:[A-Za-z0-9_.:=&+-]|%[0-9A-F]{2}){0,30}", fullmatch=True),
)


def _verify(method: str, path: str, body: bytes, headers: dict[str, str]) -> bool:
    meta = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
    # RAW_URI: the path exactly as sent, as gunicorn hands it over (scores/auth.py reads it)
    django_request = RequestFactory().generic(
        method, path, data=body, content_type="application/json", RAW_URI=path, **meta
    )
    try:
        return ServerKeyAuthentication().authenticate(Request(django_request)) is not None
    except exceptions.AuthenticationFailed:
        return False


@pytest.fixture
def key(game) -> tuple[str, str]:
    k, secret = server_key(Game.objects.get(slug="chess"))
    return k.key_id, secret


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "POST", "PUT"]), path=PATHS, body=st.binary(max_size=200))
def test_the_server_accepts_what_the_client_signs_and_nothing_else(key, method: str, path: str, body: bytes) -> None:
    key_id, secret = key
    headers = signed_headers(key_id, secret, method, path, body)
    assert _verify(method, path, body, headers)
    assert not _verify(method, path, body + b" ", headers)
    assert not _verify("DELETE", path, body, headers)
    assert not _verify(method, path + "x", body, headers)
    assert not _verify(method, path, body, {**headers, "X-Signature": sign(secret + "x", method, path, body)})


def test_an_old_signature_is_refused(key) -> None:
    key_id, secret = key
    path = "/api/v1/games/chess/boards/rating/top?window=all"
    stale = {"X-Key-Id": key_id, "X-Signature": sign(secret, "GET", path, b"", timestamp=int(time.time()) - 301)}
    assert not _verify("GET", path, b"", stale)


def test_the_suites_game_server_signs_with_the_client(server: SignedClient) -> None:
    # tests/conftest.py's SignedClient and the bench's load generator (every benchmark signs through
    # bench.loadgen.signed_headers, the fault suite too) sign with leaderboard_client.sign
    import bench.faults
    import bench.loadgen
    import tests.conftest

    assert bench.loadgen.sign is sign and bench.faults.signed_headers is bench.loadgen.signed_headers
    assert tests.conftest.sign is sign
    r = server.post(
        "/api/v1/games/chess/matches",
        {
            "match_id": "m1",
            "ended_at": "2026-11-29T18:00:00Z",
            "results": [{"player": "p1", "board": "rating", "score": 5}],
        },
    )
    assert r.status_code == 201, r.content
