"""The live websocket on a board with sub-scores (docs/api.md §2.3, §9): through Channels'
communicator and the real Redis channel layer, with results submitted through the signed API
and applied by the real projector. The `top` message's entries carry each value's sub-scores
exactly as /top does, in the board order (score, then sub-scores); a player's `rank` carries
their own, and a better tuple of the same score is told even where the rank stays."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from tests.boards.test_consumers import DEADLINE, is_top, opened, players, run_async, token_of, until
from tests.conftest import SignedClient, game_with_boards
from tests.projector import projected
from tests.reference import RefBoard, Reference

pytestmark = pytest.mark.usefixtures("topology", "real_projector")  # one Redis, and the cluster

ARENA = RefBoard("arena", "desc", "best", 0, 100, subscores=(("kills", "desc", 0, 50), ("deaths", "asc", 0, 20)))
WS = "/ws/games/subs/boards/arena/?window=all"
AT = "2026-11-29T18:00:00+00:00"


@pytest.fixture
def server(transactional_db) -> SignedClient:
    return game_with_boards("subs", [(ARENA, "unique")])[1]


def _post(server: SignedClient, ref: Reference, match_id: str, player: str, score: int, subs: dict) -> None:
    result = {"player": player, "board": "arena", "score": score, "subscores": subs}
    match = {"match_id": match_id, "ended_at": AT, "results": [result]}
    assert server.post("/api/v1/games/subs/matches", match).status_code == 201
    assert ref.submit(match) == 201
    projected()


def _expected(ref: Reference) -> list[tuple[str, int, dict[str, int]]]:
    return [
        (p, ref.values[("arena", "all", p)].value, ref.subscores_of("arena", "all", p))
        for p in ref.order("arena", "all")
    ]


def _shown(message: dict) -> list[tuple[str, int, dict[str, int]]]:
    return [(e["player"], e["score"], e["subscores"]) for e in message["entries"]]


async def _both(comm, first: Callable[[dict], bool], second: Callable[[dict], bool]) -> tuple[dict, dict]:
    """The first message each predicate accepts, in whichever order they arrive (a top held by its
    interval comes after the rank of the same change)."""
    wanted = {0: first, 1: second}
    found: dict[int, dict] = {}

    def open_one(m: dict) -> bool:
        return any(i not in found and w(m) for i, w in wanted.items())

    while len(found) < 2:
        message, before = await until(comm, open_one)
        for m in [*before, message]:
            for i, w in wanted.items():
                if i not in found and w(m):
                    found[i] = m
    return found[0], found[1]


@run_async
async def test_top_and_rank_messages_carry_the_subscores_in_the_board_order(server: SignedClient) -> None:
    ref = Reference(boards={"arena": ARENA}, tz="UTC", seasons=[])
    post = sync_to_async(_post)
    await post(server, ref, "m1", "ana", 40, {"kills": 9})
    await post(server, ref, "m2", "bo", 40, {"kills": 9, "deaths": 1})
    await post(server, ref, "m3", "cy", 40, {"kills": 2})
    comm = await opened(WS + f"&token={await sync_to_async(token_of)('cy')}")
    first = json.loads(await comm.receive_from(timeout=DEADLINE))
    assert is_top(first) and _shown(first) == _expected(ref)
    assert players(first) == ["bo", "ana", "cy"]  # one score: kills, then fewest deaths (missing: 20)
    api = await sync_to_async(Client().get)("/api/v1/games/subs/boards/arena/top?limit=10")
    assert first["entries"] == api.json()["entries"]  # the same entries as the /top API
    rank = json.loads(await comm.receive_from(timeout=DEADLINE))
    assert rank == {"type": "rank", "rank": 3, "score": 40, "subscores": {"kills": 2, "deaths": 20}}

    # the same score with more kills: cy passes ana, and the top and cy's rank say so
    await post(server, ref, "m4", "cy", 40, {"kills": 9, "deaths": 0})
    top, mine = await _both(comm, lambda m: is_top(m) and players(m)[0] == "cy", lambda m: m["type"] == "rank")
    assert _shown(top) == _expected(ref) and players(top) == ["cy", "bo", "ana"]
    assert mine == {"type": "rank", "rank": 1, "score": 40, "subscores": {"kills": 9, "deaths": 0}}

    # a better tuple that leaves cy's rank and score as they were is still told
    await post(server, ref, "m5", "cy", 40, {"kills": 12, "deaths": 0})
    top, mine = await _both(comm, lambda m: is_top(m) and _shown(m) == _expected(ref), lambda m: m["type"] == "rank")
    assert mine == {"type": "rank", "rank": 1, "score": 40, "subscores": {"kills": 12, "deaths": 0}}
    await comm.disconnect()
