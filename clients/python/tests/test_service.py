"""Every answer of docs/api.md mapped to its type or exception, against the real service
(conftest.py says which). Each test uses ids of its own: the runs share one database."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import leaderboard_client as lb
import pytest
from leaderboard_client import Client, Match, Result


def past(seconds: int = 5) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


def test_a_match_is_accepted_then_a_duplicate(client: Client, uid: str) -> None:
    match = Match.new([Result(f"{uid}-a", "rating", 1450, display_name="Alice")], ended_at=past())
    first = client.submit(match)
    assert first == lb.Submitted(match.match_id, "accepted", duplicate=False)
    again = client.submit(match)
    assert again.status == "accepted" and again.duplicate is True


def test_the_same_id_with_another_body_is_a_match_conflict(client: Client, uid: str) -> None:
    match = Match(f"{uid}-m", past(), [Result(f"{uid}-a", "rating", 10)])
    client.submit(match)
    with pytest.raises(lb.MatchConflict) as err:
        client.submit(Match(match.match_id, match.ended_at, [Result(f"{uid}-a", "rating", 11)]))
    assert isinstance(err.value, lb.Conflict) and err.value.status == 409 and err.value.code == "match_conflict"


@pytest.mark.parametrize(
    "result, error, code",
    [
        (Result("x", "rating", 10_000_001), lb.ScoreOutOfBounds, "score_out_of_bounds"),
        (Result("x", "nope", 1), lb.UnknownBoard, "unknown_board"),
        (Result("bad player!", "rating", 1), lb.BadRequest, None),
    ],
)
def test_a_refused_match_raises_its_codes_exception(client: Client, uid: str, result, error, code) -> None:
    with pytest.raises(error) as err:
        client.submit(Match.new([result], ended_at=past()))
    assert err.value.status == 400
    if code:
        assert err.value.code == code
    assert isinstance(err.value, lb.ApiError) and err.value.message


def test_ended_at_in_the_future_and_a_bad_match_id(client: Client, uid: str) -> None:
    with pytest.raises(lb.EndedAtInFuture):
        client.submit(Match.new([Result(uid, "rating", 1)], ended_at=datetime.now(UTC) + timedelta(hours=1)))
    with pytest.raises(lb.BadRequest) as err:
        client.submit(Match(f" {uid}", past(), [Result(uid, "rating", 1)]))  # leading space: docs/api.md §1.1
    assert err.value.status == 400


def test_a_batch_answers_each_match_in_order(client: Client, uid: str) -> None:
    good = Match.new([Result(f"{uid}-a", "rating", 5)], ended_at=past())
    bad = Match.new([Result(f"{uid}-b", "rating", -1)], ended_at=past())
    answers = client.submit_batch([good, bad, good])
    assert [a.status for a in answers] == ["accepted", "rejected", "accepted"]
    assert answers[2].duplicate is True
    assert isinstance(answers[1].error, lb.ScoreOutOfBounds) and not answers[1].ok


def test_a_wrong_secret_is_unauthorized_and_no_key_is_not_authenticated(url: str, game: str, creds, uid) -> None:
    with Client(url, game, key_id=creds["key_id"], secret="wrong") as bad, pytest.raises(lb.Unauthorized) as err:
        bad.submit(Match.new([Result(uid, "rating", 1)], ended_at=past()))
    assert err.value.status == 401
    with Client(url, game) as anonymous, pytest.raises(lb.Unauthorized):
        anonymous.submit(Match.new([Result(uid, "rating", 1)], ended_at=past()))


def test_reads_answer_their_types(client: Client, uid: str, settled) -> None:
    a, b, c = f"{uid}-a", f"{uid}-b", f"{uid}-c"
    client.submit(Match.new([Result(a, "rating", 9_000_001, display_name="Ana"), Result(b, "rating", 9_000_000),
                             Result(c, "rating", 1)], ended_at=past()))  # fmt: skip
    settled()  # stored at the 2xx, on the boards within docs/api.md §4.4's second
    top = client.top("rating", limit=100)
    assert isinstance(top, lb.Top) and top.window == "all" and top.total >= 3
    mine = [e for e in top.entries if e.player in (a, b)]
    assert [e.player for e in mine] == [a, b] and mine[0].display_name == "Ana"
    assert all(isinstance(e, lb.Entry) and e.rank >= 1 for e in top.entries)

    standing = client.player("rating", b, around=1)
    assert isinstance(standing, lb.Standing) and standing.player == b and standing.score == 9_000_000
    assert standing.rank_exact is True and standing.rank == mine[1].rank
    assert [e.player for e in standing.around][:3] == [a, b, *[e.player for e in standing.around][2:3]]

    assert client.set_friends(c, [a]) == [a]
    friends = client.friends("rating", c)
    assert isinstance(friends, lb.Friends)
    assert [(f.player, f.rank) for f in friends.entries] == [(a, 1), (c, 2)]
    assert friends.entries[0].board_rank == mine[0].rank

    histogram = client.histogram("rating")
    assert isinstance(histogram, lb.Histogram) and all(isinstance(x, lb.Bucket) for x in histogram.buckets)


def test_reads_carry_the_subscores_of_a_board_that_declares_them(client: Client, uid: str, settled) -> None:
    a, b = f"{uid}-a", f"{uid}-b"
    client.submit(Match.new([Result(a, "arena", 90, subscores={"kills": 3}), Result(b, "arena", 90, subscores={"kills": 7})],
                            ended_at=past()))  # fmt: skip
    settled()  # on the boards within docs/api.md §4.4's second of the 2xx
    mine = [e for e in client.top("arena", limit=100).entries if e.player in (a, b)]
    assert [(e.player, e.subscores) for e in mine] == [(b, {"kills": 7}), (a, {"kills": 3})]  # more kills first
    assert client.player("arena", a).subscores == {"kills": 3}
    assert client.set_friends(a, [b]) == [b]
    assert [(f.player, f.subscores) for f in client.friends("arena", a).entries] == [
        (b, {"kills": 7}),
        (a, {"kills": 3}),
    ]
    assert all(e.subscores is None for e in client.top("rating").entries)  # a board without them


def test_a_player_token_reads_as_that_player_and_no_other(client: Client, url: str, game: str, uid: str, settled):
    a, b = f"{uid}-a", f"{uid}-b"
    client.submit(Match.new([Result(a, "rating", 3), Result(b, "rating", 4)], ended_at=past()))
    settled()  # on the boards within docs/api.md §4.4's second of the 2xx
    token = client.player_token(a)
    assert isinstance(token, lb.PlayerToken) and token.player == a and not token.expires_within(10)
    with Client(url, game) as browser:  # no server key: only the token
        assert browser.player("rating", a, token=token.token).score == 3
        with pytest.raises(lb.Forbidden) as err:
            browser.player("rating", b, token=token.token)
        assert err.value.status == 403
        with pytest.raises(lb.Unauthorized):
            browser.player("rating", a, token="not-a-token")
    tokens = lb.PlayerTokens(client, refresh_before=60)
    assert tokens.get(a) is tokens.get(a)  # reused while far from its expiry


def test_unknown_things_are_their_not_found(client: Client, url: str, uid: str) -> None:
    client.submit(Match.new([Result(f"{uid}-a", "rating", 3)], ended_at=past()))
    with pytest.raises(lb.UnknownPlayer) as err:
        client.player("rating", f"{uid}-nobody")
    assert isinstance(err.value, lb.NotFound) and err.value.status == 404
    with pytest.raises(lb.UnknownBoard) as err:
        client.top("nope")
    assert err.value.status == 404
    with pytest.raises(lb.UnknownWindow):
        client.top("rating", window="fortnightly")
    with Client(url, "no-such-game") as other, pytest.raises(lb.UnknownGame):
        other.top("rating")
    with pytest.raises(lb.NotFrozen):
        client.standings("rating", "daily:" + datetime.now(UTC).date().isoformat())


def test_a_league_groups_standings_read_sends_the_group(client: Client, url: str, game: str, creds) -> None:
    # docs/api.md §10: `group=` reads a league group's frozen standings; this game has no league, so
    # no window has a frozen group: unknown_group, where the same read without it is not_frozen
    window = "daily:2026-11-28"
    with pytest.raises(lb.NotFrozen):
        client.standings("rating", window)
    with pytest.raises(lb.UnknownGroup) as err:
        client.standings("rating", window, group="1")
    assert isinstance(err.value, lb.NotFound) and err.value.status == 404 and err.value.code == "unknown_group"

    async def aio() -> None:
        async with lb.AsyncClient(url, game, **creds) as other:
            with pytest.raises(lb.UnknownGroup):
                await other.standings("rating", window, group="1", limit=10)

    asyncio.run(aio())


def test_every_code_has_its_class() -> None:
    for code, cls in lb.ERROR_CODES.items():
        error = lb.error_for(418, code, "m")
        assert type(error) is cls and error.code == code
    assert type(lb.error_for(503, "something_new", "m")) is lb.ServiceUnavailable
    assert type(lb.error_for(502, None, "Bad Gateway")) is lb.ServerError
    assert lb.error_for(429, "rate_limited", "m", retry_after=2.0).retry_after == 2.0


def test_the_async_client_submits_and_reads(url: str, game: str, creds, uid: str, settled) -> None:
    asyncio.run(_async_submits_and_reads(url, game, creds, uid, settled))


async def _async_submits_and_reads(url: str, game: str, creds, uid: str, settled) -> None:
    async with lb.AsyncClient(url, game, **creds) as client:
        match = Match.new([Result(f"{uid}-a", "kills", 7)], ended_at=past())
        assert (await client.submit(match)).status == "accepted"
        assert [a.duplicate for a in await client.submit_batch([match])] == [True]
        await asyncio.to_thread(settled)  # on the boards within docs/api.md §4.4's second of the 2xx
        assert (await client.player("kills", f"{uid}-a")).score == 7
        with pytest.raises(lb.ScoreOutOfBounds):
            await client.submit(Match.new([Result(f"{uid}-a", "kills", 201)], ended_at=past()))
