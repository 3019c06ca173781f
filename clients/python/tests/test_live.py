"""The websocket helper against the real service: typed messages, a live rank, refusals."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import leaderboard_client as lb
import pytest
from leaderboard_client import Client, Match, Result

DEADLINE = 30.0


def _past() -> datetime:
    return datetime.now(UTC) - timedelta(seconds=5)


def test_a_players_socket_hears_the_top_and_its_rank_then_a_change(client: Client, url, game, uid, settled) -> None:
    me, rival = f"{uid}-me", f"{uid}-rival"
    top_score = max([e.score for e in client.top("live", limit=1).entries] or [0])
    client.submit(
        Match.new([Result(me, "live", top_score + 10), Result(rival, "live", top_score + 20)], ended_at=_past())
    )
    settled()  # the socket's first messages read the boards: this match is on them (docs/api.md §4.4)
    token = client.player_token(me).token

    async def run() -> list[lb.LiveMessage]:
        seen: list[lb.LiveMessage] = []
        async with lb.AsyncClient(url, game) as reader:
            stream = reader.live("live", token=token)
            async for message in stream:
                seen.append(message)
                if message == lb.RankMessage(2, top_score + 10):
                    await asyncio.to_thread(
                        client.submit, Match.new([Result(me, "live", top_score + 30)], ended_at=_past())
                    )
                if message == lb.RankMessage(1, top_score + 30):
                    await stream.aclose()
                    return seen
        return seen

    seen = asyncio.run(asyncio.wait_for(run(), DEADLINE))
    assert isinstance(seen[0], lb.TopMessage) and seen[0].window == "all"
    assert [e.player for e in seen[0].entries][:2] == [rival, me]
    assert seen[-1] == lb.RankMessage(1, top_score + 30)


def test_a_bad_token_is_refused_with_unauthorized(url, game) -> None:
    async def run() -> None:
        async for _ in lb.subscribe(url, game, "live", token="not-a-token"):
            pass

    with pytest.raises(lb.Unauthorized):
        asyncio.run(asyncio.wait_for(run(), DEADLINE))


def test_an_unknown_board_is_refused_with_not_found(url, game) -> None:
    async def run() -> None:
        async for _ in lb.subscribe(url, game, "no-such-board"):
            pass

    with pytest.raises(lb.NotFound):
        asyncio.run(asyncio.wait_for(run(), DEADLINE))


def test_the_live_url_is_the_documented_one() -> None:
    assert (
        lb.live_url("https://lb.example.com/", "chess", "rating", window="daily", token="t")
        == "wss://lb.example.com/ws/games/chess/boards/rating/?window=daily&token=t"
    )
