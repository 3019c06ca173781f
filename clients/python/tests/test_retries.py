"""Retries stay idempotent: the same bytes (the same match_id) are sent again, and the service
counts the match once. The misbehaviour comes from a loopback proxy in front of the real service
(misbehaving.py): the service itself does not drop answers on cue, nor answer 503 `overloaded`
on demand (docs/api.md §4.5)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import leaderboard_client as lb
import pytest
from leaderboard_client import Client, Match, Result
from misbehaving import DROP_AFTER_FORWARD, OVERLOADED, RATE_LIMITED, proxy


def _match(uid: str, score: int = 5) -> Match:
    return Match.new([Result(f"{uid}-p", "kills", score)], ended_at=datetime.now(UTC) - timedelta(seconds=5))


def test_a_submission_whose_answer_was_lost_is_retried_and_counted_once(client: Client, url, game, creds, uid, settled):
    match = _match(uid)
    with proxy(url, [DROP_AFTER_FORWARD]) as p, Client(p.url, game, **creds) as through:
        answer = through.submit(match)
    assert answer.status == "accepted" and answer.duplicate is True  # the first try was stored
    posts = [s for s in p.seen if s.method == "POST"]
    assert [s.action for s in posts] == [DROP_AFTER_FORWARD, "forward"]
    assert posts[0].body == posts[1].body  # the same bytes: the same match_id
    settled()  # a second count, had there been one, would be on the board now (docs/api.md §4.4)
    assert client.player("kills", f"{uid}-p").score == 5  # a total board: twice would be 10


def test_a_batch_whose_answer_was_lost_is_retried_and_counted_once(client: Client, url, game, creds, uid, settled):
    matches = [_match(uid, 1) for _ in range(3)]
    with proxy(url, [DROP_AFTER_FORWARD]) as p, Client(p.url, game, **creds) as through:
        answers = through.submit_batch(matches)
    assert [a.duplicate for a in answers] == [True, True, True]
    settled()  # a second count, had there been one, would be on the board now (docs/api.md §4.4)
    assert client.player("kills", f"{uid}-p").score == 3


@pytest.mark.parametrize("refusal", [OVERLOADED, RATE_LIMITED])
def test_a_503_overloaded_or_a_429_is_waited_out_then_succeeds(client: Client, url, game, creds, uid, refusal, settled):
    match = _match(uid)
    with proxy(url, [refusal, refusal]) as p, Client(p.url, game, **creds) as through:
        answer = through.submit(match)
    assert answer.status == "accepted" and answer.duplicate is False
    tries = [s for s in p.seen if s.method == "POST"]
    assert [s.action for s in tries] == [refusal, refusal, "forward"]
    assert len({s.body for s in tries}) == 1
    # each Retry-After: 1 was honoured: no try came sooner than a second after the one refused
    assert all(b.at - a.at >= 1.0 for a, b in zip(tries, tries[1:], strict=False))
    settled()  # on the boards within docs/api.md §4.4's second of the 2xx
    assert client.player("kills", f"{uid}-p").score == 5


def test_past_its_retries_the_overload_is_raised_with_its_retry_after(url, game, creds, uid):
    policy = lb.RetryPolicy(attempts=2)
    with (
        proxy(url, [OVERLOADED] * 2) as p,
        Client(p.url, game, retry=policy, **creds) as through,
        pytest.raises(lb.Overloaded) as err,
    ):
        through.submit(_match(uid))
    assert err.value.status == 503 and err.value.retry_after == 1.0
    assert len(p.seen) == 2


def test_no_service_at_all_is_a_transport_error(game, creds, uid):
    policy = lb.RetryPolicy(attempts=2, base_delay=0.01)
    with Client("http://127.0.0.1:9", game, retry=policy, **creds) as nowhere, pytest.raises(lb.TransportError):
        nowhere.submit(_match(uid))


def test_the_async_client_retries_the_same_way(client: Client, url, game, creds, uid, settled):
    async def run(base: str) -> lb.Submitted:
        async with lb.AsyncClient(base, game, **creds) as through:
            return await through.submit(match)

    match = _match(uid)
    with proxy(url, [OVERLOADED, DROP_AFTER_FORWARD]) as p:
        answer = asyncio.run(run(p.url))
    assert answer.duplicate is True
    assert [s.action for s in p.seen] == [OVERLOADED, DROP_AFTER_FORWARD, "forward"]
    settled()  # a second count, had there been one, would be on the board now (docs/api.md §4.4)
    assert client.player("kills", f"{uid}-p").score == 5
