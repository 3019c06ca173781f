"""A signed request that mints credentials (a player token, a login link) is served once
(docs/api.md §3.1, "Requests that mint credentials"): the same signature again within its
300 s is a 401 and mints nothing; with Redis unreachable, minting is refused (503)."""

from __future__ import annotations

import pytest
from django.test import Client
from leaderboard_client.signing import sign

from scores.models import LoginLinkUse, Player
from tests.boards.test_redis_down import throwaway_redis  # noqa: F401 (a fixture)
from tests.conftest import SignedClient
from tests.factories import PlayerFactory, server_key

pytestmark = pytest.mark.django_db(transaction=True)

PATHS = ("/api/v1/games/chess/players/p1/token", "/api/v1/games/chess/players/p1/login-link")


@pytest.fixture
def minter(game) -> SignedClient:
    PlayerFactory(game=game, external_id="p1")
    key, secret = server_key(game, scopes=("submit",))
    return SignedClient(key.key_id, secret)


def send(server: SignedClient, path: str, signature: str):  # noqa: ANN201 (a test client's response)
    """POST `path` with exactly this signature (as a replaying attacker sends it)."""
    headers = {"X-Key-Id": server.key_id, "X-Signature": signature}
    return Client().post(path, data=b"", content_type="application/json", headers=headers)


@pytest.mark.parametrize("path", PATHS)
def test_the_same_signed_minting_request_twice_is_served_once(minter: SignedClient, path: str) -> None:
    signature = sign(minter.secret, "POST", path)
    first = send(minter, path, signature)
    assert first.status_code == 200, first.content
    assert set(first.json()) in ({"token", "expires_at"}, {"url", "expires_at"})

    replay = send(minter, path, signature)
    assert replay.status_code == 401
    assert replay.json() == {
        "error": {
            "code": "authentication_failed",
            "message": "this signature was already used: a request that mints credentials is served once; sign a new one",
        }
    }
    # signed again (another timestamp, or a nonce in the query within the same second): served
    t = int(signature.split(",")[0].removeprefix("t="))
    assert send(minter, path, sign(minter.secret, "POST", path, timestamp=t - 1)).status_code == 200
    with_nonce = path + "?nonce=2"
    assert send(minter, with_nonce, sign(minter.secret, "POST", with_nonce, timestamp=t)).status_code == 200


def test_a_replayed_login_link_request_mints_no_link(minter: SignedClient) -> None:
    """What the replay would have handed out does not exist: the first answer's link is the only
    one, and it signs in once."""
    path = PATHS[1]
    signature = sign(minter.secret, "POST", path)
    link = send(minter, path, signature).json()["url"].removeprefix("http://testserver")
    assert "url" not in send(minter, path, signature).json()
    assert Client().post(link).status_code == 302
    assert LoginLinkUse.objects.count() == 1


def test_a_refused_request_is_not_used_up(minter: SignedClient) -> None:
    """Once-only is recorded right before minting: a request refused for something else (an
    unknown player) answers the same when sent again."""
    path = "/api/v1/games/chess/players/nobody/token"
    signature = sign(minter.secret, "POST", path)
    for _ in range(2):
        response = send(minter, path, signature)
        assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_player"
    # the player appears: the very same request is now served, once
    PlayerFactory(game=Player.objects.get(external_id="p1").game, external_id="nobody")
    assert send(minter, path, signature).status_code == 200
    assert send(minter, path, signature).status_code == 401


def test_other_signed_requests_may_be_sent_again(minter: SignedClient, game) -> None:
    """Only minting is once-only: a read signed once may be repeated within its 300 s."""
    path = "/api/v1/games/chess/boards/rating/top"
    signature = sign(minter.secret, "GET", path)
    headers = {"X-Key-Id": minter.key_id, "X-Signature": signature}
    assert [Client().get(path, headers=headers).status_code for _ in range(2)] == [200, 200]


@pytest.mark.parametrize("path", PATHS)
def test_with_redis_down_minting_is_refused(minter: SignedClient, path: str, throwaway_redis) -> None:  # noqa: F811
    """The replay check needs Redis: rather than mint without it, the service answers 503."""
    throwaway_redis.stop()
    response = minter.at_the_answer().post(path)
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert response.json()["error"]["code"] == "redis_unavailable"
    assert set(response.json()) == {"error"}
