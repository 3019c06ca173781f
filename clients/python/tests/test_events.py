"""The events feed (docs/api.md §13.1) through the client: every event once, in order, resumed
from the cursor the caller kept, sync and async. The runs share one database: each test looks
at its own players' events only."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import leaderboard_client as lb
import pytest
from leaderboard_client import Client, Match, Result


def past(seconds: int = 5) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


def caught_up(client: Client) -> str | None:
    """Where the feed stands now: the cursor of its last event (None: empty)."""
    last = None
    for event in client.events():
        last = event.id
    return last


def test_a_consumer_hears_each_match_and_value_once_and_resumes_from_its_cursor(client: Client, uid: str, settled):
    start = caught_up(client)
    first = Match.new([Result(f"{uid}-a", "rating", 100)], ended_at=past())
    second = Match.new([Result(f"{uid}-a", "rating", 250)], ended_at=past())
    client.submit(first)
    client.submit(second)
    settled()
    heard = list(client.events(after=start, limit=1))  # one event a page: every page boundary
    mine = [e for e in heard if e.data.get("match_id") in (first.match_id, second.match_id)
            or e.data.get("player") == f"{uid}-a"]  # fmt: skip
    accepted = [e.data["match_id"] for e in mine if e.type == "match.accepted"]
    assert sorted(accepted) == sorted([first.match_id, second.match_id])
    all_time = [(e.data["before"], e.data["after"]) for e in mine
                if e.type == "value.changed" and e.data["window"] == "all"]  # fmt: skip
    assert all_time[-1][1] == 250 and all_time[0][0] is None
    assert all(isinstance(e.at, datetime) for e in mine)
    # a consumer that stopped after the first event resumes with exactly the rest
    assert list(client.events(after=heard[0].id)) == heard[1:]
    assert client.events_page(after=heard[-1].id).events == ()


def test_a_cursor_the_feed_did_not_give_is_invalid_cursor(client: Client) -> None:
    with pytest.raises(lb.InvalidCursor):
        client.events_page(after="not-a-cursor")


def test_the_async_client_reads_the_feed_the_same(client: Client, url: str, game: str, creds, uid: str, settled):
    start = caught_up(client)
    match = Match.new([Result(f"{uid}-b", "kills", 3)], ended_at=past())
    client.submit(match)
    settled()

    async def read() -> list[lb.Event]:
        async with lb.AsyncClient(url, game, **creds) as aio:
            return [e async for e in aio.events(after=start, limit=2)]

    heard = asyncio.run(read())
    assert heard == list(client.events(after=start))
    assert any(e.type == "match.accepted" and e.data["match_id"] == match.match_id for e in heard)
