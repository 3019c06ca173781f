"""docs/api.md §4: a result is visible on every board read (top, rank, friends, websocket)
within 1 s of its 2xx response, on the path `make run` runs: the submission's NOTIFY wakes the
real projector process (`manage.py projector`), which applies it to Postgres and Redis and
publishes the live update; the reads go through the API views with their caches. Each test runs
on one Redis and with the ranking index on the local Redis Cluster, boards of 4 shards
(tests/conftest.py's `topology`; docs/reliability.md has the figures).

Each read is polled every 20 ms from the 2xx on; the test fails if any kind of read first shows
the new score later than 1 s after it. Polling stops at a deadline well past that, so a result
that never shows fails with its measured delays too."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import Client

from boards import live
from boards.routing import websocket_application
from scores.models import Player
from scores.services import player_token_issue
from tests.boards.conftest import URL
from tests.boards.test_reads_operational import throttle_rates
from tests.conftest import SignedClient
from tests.polling import until
from tests.websocket import WebsocketCommunicator

PROMISE = 1.0  # seconds from the 2xx (docs/api.md §4)
GIVE_UP = 10.0  # a result not visible by then is reported with what was seen
EVERY = 0.02
ROUNDS = 5

pytestmark = pytest.mark.usefixtures("topology")  # before `game`: the cluster's boards are sharded


def _submit(server: SignedClient, match_id: str, player: str, score: int) -> float:
    body = {"match_id": match_id, "ended_at": "2026-11-28T12:00:00Z", "results": []}
    body["results"] = [{"player": player, "board": "rating", "score": score}]
    response = server.post(URL + "/matches", body)
    assert response.status_code == 201 and response.json()["status"] == "accepted", response.content
    return time.monotonic()


def _first_seen(reads: dict[str, Callable[[], bool]], since: float) -> dict[str, float]:
    """Seconds from `since` until each read first showed the result (GIVE_UP if never)."""
    seen: dict[str, float] = {}
    while len(seen) < len(reads) and time.monotonic() - since < GIVE_UP:
        for name, shows in reads.items():
            if name not in seen and shows():
                seen[name] = time.monotonic() - since
        time.sleep(EVERY)
    return {name: seen.get(name, GIVE_UP) for name in reads}


def _reads_measured(server: SignedClient, monkeypatch) -> list[dict[str, float]]:
    """ROUNDS results of player a through the real projector; per round, the seconds from
    the 2xx until top, a's rank and b's friends board first showed it."""
    throttle_rates(monkeypatch, player_reads="100000/min", address_reads="100000/min")  # polled every 20 ms
    until(lambda: Client().get("/healthz").json()["projector"] == "ok", "the projector owning its lanes")
    _submit(server, "warm-a", "a", 10)
    _submit(server, "warm-b", "b", 20)
    until(lambda: Player.objects.filter(external_id__in=["a", "b"]).count() == 2, "the players stored")
    assert server.request("PUT", URL + "/players/b/friends", {"friends": ["a"]}).status_code == 200
    as_a, as_b = (
        Client(headers={"Authorization": f"Bearer {player_token_issue(player=Player.objects.get(external_id=p))[0]}"})
        for p in ("a", "b")
    )
    delays: list[dict[str, float]] = []
    for n in range(ROUNDS):
        score = 1000 + n

        def on_top(score: int = score) -> bool:
            entries = Client().get(URL + "/boards/rating/top?limit=10").json()["entries"]
            return any(e["player"] == "a" and e["score"] == score for e in entries)

        def on_rank(score: int = score) -> bool:
            return as_a.get(URL + "/boards/rating/players/a").json().get("score") == score

        def on_friends(score: int = score) -> bool:
            entries = as_b.get(URL + "/boards/rating/players/b/friends").json()["entries"]
            return any(e["player"] == "a" and e["score"] == score for e in entries)

        acknowledged = _submit(server, f"m{n}", "a", score)
        delays.append(_first_seen({"top": on_top, "rank": on_rank, "friends": on_friends}, acknowledged))
    return delays


def _worst(delays: list[dict[str, float]], kind: str) -> float:
    return max(d[kind] for d in delays)


def test_a_result_shows_on_the_rank_and_friends_reads_within_a_second(
    topology: str, server: SignedClient, game, projector_process, monkeypatch
) -> None:
    projector_process()
    delays = _reads_measured(server, monkeypatch)
    worst = {kind: _worst(delays, kind) for kind in ("rank", "friends")}
    print(f"{topology}: rank and friends, slowest seconds from the 2xx: {worst}; every round: {delays}")  # pytest -rP
    assert all(w <= PROMISE for w in worst.values()), f"slowest seconds from the 2xx: {worst}; every round: {delays}"


def test_a_result_shows_on_top_within_a_second(
    topology: str, server: SignedClient, game, projector_process, monkeypatch
) -> None:
    projector_process()
    delays = _reads_measured(server, monkeypatch)
    print(f"{topology}: top, seconds from the 2xx per round: {[round(d['top'], 3) for d in delays]}")  # pytest -rP
    assert _worst(delays, "top") <= PROMISE, f"seconds from the 2xx to /top, per round: {delays}"


def test_a_result_reaches_the_websocket_within_a_second(
    topology: str, server: SignedClient, game, projector_process
) -> None:
    projector_process()
    until(lambda: Client().get("/healthz").json()["projector"] == "ok", "the projector owning its lanes")

    async def scenario() -> list[float]:
        comm = WebsocketCommunicator(websocket_application(), "/ws/games/chess/boards/rating/?window=all")
        connected, _ = await comm.connect(timeout=GIVE_UP)
        assert connected
        assert json.loads(await comm.receive_from(timeout=GIVE_UP))["type"] == "top"  # the board on connect
        delays = []
        for n in range(ROUNDS):
            score = 2000 + n
            acknowledged = await sync_to_async(_submit)(server, f"w{n}", f"p{n}", score)
            while True:
                assert time.monotonic() - acknowledged < GIVE_UP, f"round {n}: no live update with {score}"
                # the trailing edge of the per-second limit is a Celery task in make run (beat
                # schedules it); no worker runs here, so the loop runs it, as often as beat could
                await sync_to_async(live.flush_due)()
                if await comm.receive_nothing(timeout=EVERY, interval=0.005):
                    continue
                message = json.loads(await comm.receive_from(timeout=GIVE_UP))
                if any(e.get("score") == score for e in message.get("entries", [])):
                    delays.append(time.monotonic() - acknowledged)
                    break
        await comm.disconnect()
        return delays

    delays = async_to_sync(scenario)()
    print(f"{topology}: websocket, seconds from the 2xx per round: {[round(d, 3) for d in delays]}")  # pytest -rP
    assert max(delays) <= PROMISE, f"seconds from the 2xx to the live update, per round: {delays}"
