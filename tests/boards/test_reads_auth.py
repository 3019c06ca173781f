"""Caches in front of authentication: server keys and player tokens are checked once per process,
and a change to a key still counts from the next request."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.test import Client
from django.utils import timezone

from scores.auth import make_player_token
from scores.models import Player, ServerKey
from scores.services import server_key_revoke
from tests.boards.conftest import URL, submit
from tests.conftest import SignedClient
from tests.factories import server_key
from tests.scores.test_ingest_api import assert_error


def test_a_revoked_key_is_refused_at_once_though_it_was_cached(server: SignedClient, game) -> None:
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 10}])
    reader_key, secret = server_key(game, name="reader")
    reader = SignedClient(reader_key.key_id, secret)
    for _ in range(2):  # the second read is served from the process's key cache
        assert reader.get(URL + "/boards/rating/players/p1").status_code == 200
    server_key_revoke(key=reader_key)
    assert_error(reader.get(URL + "/boards/rating/players/p1"), 403, "forbidden")
    # the other key is unaffected
    assert server.get(URL + "/boards/rating/players/p1").status_code == 200


def test_a_key_whose_scopes_change_is_read_again(server: SignedClient, game) -> None:
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 10}])
    key = ServerKey.objects.get(key_id=server.key_id)
    key.scopes = ["moderate"]
    key.save(update_fields=["scopes"])
    match = {"match_id": "m2", "ended_at": "2026-11-28T12:00:00Z", "results": []}
    assert_error(server.post(URL + "/matches", match), 403, "forbidden")


def test_a_cached_token_still_expires(server: SignedClient, game) -> None:
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 10}])
    player = Player.objects.get(external_id="p1")
    soon = make_player_token(game.id, player.pk, timezone.now() + timedelta(seconds=30))
    gone = make_player_token(game.id, player.pk, timezone.now() - timedelta(seconds=1))
    ok = Client(headers={"Authorization": f"Bearer {soon}"}).get(URL + "/boards/rating/players/p1")
    assert ok.status_code == 200
    expired = Client(headers={"Authorization": f"Bearer {gone}"})
    for _ in range(2):
        assert_error(expired.get(URL + "/boards/rating/players/p1"), 401, "authentication_failed")


def test_a_player_token_lives_24_hours(server: SignedClient, game) -> None:
    """docs/api.md §3.2 and §15: the default PLAYER_TOKEN_TTL_SECONDS. A token minted now expires
    24 h after the request; one minted 24 h and a second ago (its expiry set as minting sets it)
    is refused, one minted 23 h 59 min ago still reads. Explicit expiries: no sleep, no date."""
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 10}])
    before = timezone.now()
    response = server.post(URL + "/players/p1/token")
    after = timezone.now()
    assert response.status_code == 200, response.content
    expires_at = datetime.fromisoformat(response.json()["expires_at"])
    assert before + timedelta(hours=24) <= expires_at <= after + timedelta(hours=24)
    bearer = Client(headers={"Authorization": f"Bearer {response.json()['token']}"})
    assert bearer.get(URL + "/boards/rating/players/p1").status_code == 200
    player = Player.objects.get(external_id="p1")

    def minted(ago: timedelta) -> Client:
        token = make_player_token(game.id, player.pk, timezone.now() - ago + timedelta(hours=24), "p1")
        return Client(headers={"Authorization": f"Bearer {token}"})

    refused = minted(timedelta(hours=24, seconds=1)).get(URL + "/boards/rating/players/p1")
    assert refused.status_code == 401
    assert refused.json() == {
        "error": {"code": "authentication_failed", "message": "the bearer token is invalid, expired or revoked"}
    }
    assert minted(timedelta(hours=23, minutes=59)).get(URL + "/boards/rating/players/p1").status_code == 200
