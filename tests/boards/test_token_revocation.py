"""Revoking a player's bearer tokens (docs/api.md §3.2, "Revoking"): refused from the next
request on every path that takes one (a player's own read in its hot form, whose board script
checks the token, the same read in its general form, the websocket handshake),
open websockets on them closed 4401, tokens made afterwards working; Redis' mirror of the
generation lost or unreachable changes none of that."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.test import Client

from rediskit.client import get_redis
from scores.models import Player, PlayerTokenGeneration
from tests.boards.conftest import URL, submit
from tests.boards.test_consumers import DEADLINE, WS, closed_with, is_top, opened, run_async, until
from tests.boards.test_redis_down import throwaway_redis  # noqa: F401 (a fixture)
from tests.conftest import SignedClient
from tests.factories import GameFactory, server_key

READS = ("/boards/rating/players/{p}", "/boards/rating/players/{p}/friends")


def revoke(server: SignedClient, player: str):  # noqa: ANN201 (a test client's response)
    return server.post(f"{URL}/players/{player}/tokens/revoke")


def token_for(server: SignedClient, player: str, nonce: str = "") -> str:
    """A token as a game server gets one (a signed, once-only request: `nonce` tells apart two
    made within one second, docs/api.md §3.1)."""
    response = server.post(f"{URL}/players/{player}/token{nonce}")
    assert response.status_code == 200, response.content
    return response.json()["token"]


def bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


# A repeated parameter is no plain query: the read takes its general form (the token checked
# before the board is looked up), where a plain one takes the hot form (checked in the board
# script's round trip): boards/api/players.py
FORMS = ("", "?window=all&window=all")


def statuses(token: str, player: str = "p1") -> list[int]:
    """The player's own reads with `token`, in the hot form and in the general one."""
    return [bearer(token).get(URL + read.format(p=player) + form).status_code for form in FORMS for read in READS]


def test_a_revoked_token_is_refused_from_the_next_request_and_a_new_one_works(ranked: SignedClient) -> None:
    old = token_for(ranked, "p1")
    other = token_for(ranked, "p2")
    assert statuses(old) == [200] * 4

    response = revoke(ranked, "p1")
    assert response.status_code == 204 and response.content == b""

    assert statuses(old) == [401] * 4
    refused = bearer(old).get(URL + READS[0].format(p="p1"))
    assert refused.json()["error"] == {
        "code": "authentication_failed",
        "message": "the bearer token is invalid, expired or revoked",
    }
    # another player's token is untouched; a token made after the revocation works on both paths
    assert statuses(other, "p2") == [200] * 4
    new = token_for(ranked, "p1", "?nonce=after")
    assert statuses(new) == [200] * 4
    # revoking again refuses that one too, and the first stays refused
    assert revoke(ranked, "p1").status_code == 204
    assert statuses(new) == statuses(old) == [401] * 4
    assert PlayerTokenGeneration.objects.get(player__external_id="p1").generation == 2


def test_a_revoked_token_joins_no_tournament_either(ranked: SignedClient) -> None:
    """Every view that takes a player token authenticates it the one way (PlayerTokenAuthentication)."""
    old = token_for(ranked, "p1")
    assert revoke(ranked, "p1").status_code == 204
    response = bearer(old).post(URL + "/tournaments/rating/players/p1/join")
    assert response.status_code == 401 and response.json()["error"]["code"] == "authentication_failed"


def test_a_lost_mirror_is_read_again_from_postgres(ranked: SignedClient) -> None:
    """Redis' copy of the generation is a cache: emptied (an eviction, a restart), the revoked
    token stays refused on both paths, and the copy comes back."""
    old = token_for(ranked, "p1")
    assert revoke(ranked, "p1").status_code == 204
    fresh = token_for(ranked, "p1", "?nonce=after")
    r = get_redis()
    key = f"ptg:{Player.objects.get(external_id='p1').pk}"
    for _ in range(2):
        r.delete(key)
        assert statuses(old) == [401] * 4
        assert r.get(key) == b"1"
        r.delete(key)
        assert statuses(fresh) == [200] * 4


def test_revoking_needs_the_games_signed_request_and_a_known_player(ranked: SignedClient) -> None:
    assert Client().post(f"{URL}/players/p1/tokens/revoke").status_code == 401
    response = revoke(ranked, "nobody")
    assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_player"
    key, secret = server_key(GameFactory(slug="other"))
    assert revoke(SignedClient(key.key_id, secret), "p1").status_code == 403
    assert not PlayerTokenGeneration.objects.exists()


def test_with_redis_down_a_revocation_is_refused_and_changes_nothing(
    server: SignedClient,
    game,
    throwaway_redis,  # noqa: F811 (the fixture imported above)
) -> None:
    """The mirror is written before the revocation commits: with Redis unreachable the readers
    could not see it, so it is refused (503) rather than committed unseen. Reads meanwhile check
    the token against Postgres."""
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 10}])
    token = token_for(server, "p1")
    throwaway_redis.stop()
    response = revoke(server, "p1")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "redis_unavailable" and response["Retry-After"] == "1"
    assert not PlayerTokenGeneration.objects.exists()
    assert bearer(token).get(URL + READS[0].format(p="p1")).status_code == 200  # degraded, from Postgres
    # a revocation made while Redis was up holds while it is down
    PlayerTokenGeneration.objects.create(
        player=Player.objects.get(external_id="p1"), generation=1, revoked_at="2026-11-28T12:00:00Z"
    )
    assert bearer(token).get(URL + READS[0].format(p="p1")).status_code == 401


# --- the websocket -------------------------------------------------------------------------


@run_async
async def test_an_open_socket_on_a_revoked_token_is_closed_4401_and_others_stay(ranked: SignedClient) -> None:
    p4 = await sync_to_async(token_for)(ranked, "p4")
    p5 = await sync_to_async(token_for)(ranked, "p5")
    revoked, kept = await opened(WS + f"?token={p4}"), await opened(WS + f"?token={p5}")
    for comm in (revoked, kept):
        assert is_top(json.loads(await comm.receive_from(timeout=DEADLINE)))
        assert json.loads(await comm.receive_from(timeout=DEADLINE))["type"] == "rank"

    assert (await sync_to_async(revoke)(ranked, "p4")).status_code == 204
    # within PLAYER_TOKEN_RECHECK_SECONDS (2 s) of the revocation; DEADLINE bounds the wait
    assert await closed_with(revoked) == 4401
    # the other player's socket goes on getting updates
    await sync_to_async(submit)(ranked, "n1", [{"player": "p5", "board": "rating", "score": 460}])
    mine, _ = await until(kept, lambda m: m["type"] == "rank")
    assert mine == {"type": "rank", "rank": 2, "score": 460}
    await kept.disconnect()

    # the revoked token is refused at the handshake; a new token opens the socket
    again = await opened(WS + f"?token={p4}")
    assert await closed_with(again) == 4401
    fresh = await sync_to_async(token_for)(ranked, "p4", "?nonce=after")
    comm = await opened(WS + f"?token={fresh}")
    assert is_top(json.loads(await comm.receive_from(timeout=DEADLINE)))
    assert json.loads(await comm.receive_from(timeout=DEADLINE)) == {"type": "rank", "rank": 5, "score": 300}
    await comm.disconnect()
