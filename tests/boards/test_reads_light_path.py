"""The player read's light path: API requests with their own credentials skip the session,
auth and messages middleware, and a player's own standing counts its rate limits in the page
script's round trip. Session (staff) reads of the API keep working."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from redis.connection import AbstractConnection

from tests.boards.conftest import URL, player_client, submit
from tests.boards.test_reads_operational import throttle_rates
from tests.conftest import SignedClient
from tests.scores.test_ingest_api import assert_error

STANDING = URL + "/boards/rating/players/{}?around=5"


@pytest.fixture
def board(server: SignedClient, game) -> SignedClient:
    submit(server, "m1", [{"player": f"p{i}", "board": "rating", "score": i * 10} for i in range(1, 21)])
    return server


def test_staff_can_read_the_api_with_their_session(board) -> None:
    staff = Client()
    staff.force_login(User.objects.create_user("ops", password="pw", is_staff=True))
    response = staff.get(STANDING.format("p7"))
    assert response.status_code == 200, response.content
    assert response.json()["rank"] == 14
    # a signed-in user who is not staff may not, and nobody signed in is told to authenticate
    plain = Client()
    plain.force_login(User.objects.create_user("someone", password="pw"))
    assert_error(plain.get(STANDING.format("p7")), 403, "forbidden")
    assert Client().get(STANDING.format("p7")).status_code == 401
    # a proxy's Basic credentials in front of the service are not the API's: the session counts
    behind_proxy = Client(headers={"Authorization": "Basic b3BzOnB3"})
    behind_proxy.force_login(User.objects.get(username="ops"))
    assert behind_proxy.get(STANDING.format("p7")).status_code == 200


def test_a_token_read_neither_reads_nor_sets_a_session(board) -> None:
    client = player_client("p7")
    staff = User.objects.create_user("ops", password="pw", is_staff=True)
    client.force_login(staff)  # the browser also holds a staff session: the token decides
    own = client.get(STANDING.format("p7"))
    assert own.status_code == 200
    assert "Cookie" not in own.get("Vary", "")
    assert not own.cookies
    assert_error(client.get(STANDING.format("p8")), 403, "forbidden")


def test_a_players_own_warm_standing_costs_one_redis_command(board, monkeypatch) -> None:
    """Counted at the connection's send (the scripts run on the thread's own connection, not
    through Redis.execute_command: docs/reads.md, "What a read skips")."""
    client = player_client("p7")
    first = client.get(STANDING.format("p7")).json()  # warms this process's id and profile caches
    sent: list[bytes] = []
    real_send = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: object, *args: object, **kwargs: object) -> object:
        packed = command if isinstance(command, bytes | str) else b"".join(command)  # type: ignore[arg-type]
        sent.append(packed.encode() if isinstance(packed, str) else packed)
        return real_send(self, command, *args, **kwargs)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    again = client.get(STANDING.format("p7"))
    monkeypatch.undo()
    assert again.status_code == 200
    assert again.json() == first
    assert len(sent) == 1 and b"EVALSHA" in sent[0]  # throttle and page in one script call


def test_an_own_read_over_its_limit_is_refused_before_anything_else(board, monkeypatch) -> None:
    throttle_rates(monkeypatch, player_reads="3/min", address_reads="1000/min")
    client = player_client("p7")
    for _ in range(3):
        assert client.get(STANDING.format("p7")).status_code == 200
    limited = client.get(STANDING.format("p7"))
    assert_error(limited, 429, "rate_limited")
    assert int(limited["Retry-After"]) > 0
    # refused before the view: an unknown window or player is still a 429
    assert_error(client.get(URL + "/boards/rating/players/p7?window=nope"), 429, "rate_limited")
    assert_error(client.get(URL + "/boards/rating/players/nobody"), 429, "rate_limited")
    # another player's own reads are counted apart
    assert player_client("p8").get(STANDING.format("p8")).status_code == 200
