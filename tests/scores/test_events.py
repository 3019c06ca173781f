"""The events feed (docs/api.md §13.1, scores/events.py): what a studio's consumer reads by
cursor, through the API, beside the real projector: every event once, in order, with nothing
skipped for a transaction that committed late; scopes and games kept apart; bad and expired
cursors refused; retention dropping whole days."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import quote

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from scores import events
from scores.models import PlayerValue
from scores.partitions import EVENTS, day_partitions, event_partitions_ensure
from scores.selectors import cached_board
from seasons import services as seasons
from tests.conftest import SignedClient
from tests.factories import GameFactory, server_key
from tests.feed import feed_arrivals, feed_replay

AT = "2026-11-29T18:59:58Z"
FEED = "/api/v1/games/chess/events"


@pytest.fixture
def reader(game) -> SignedClient:
    key, secret = server_key(game, scopes=("events",))
    return SignedClient(key.key_id, secret)


def submit(server: SignedClient, match_id: str, player: str, score: int, board: str = "rating") -> None:
    body = {"match_id": match_id, "ended_at": AT, "results": [{"player": player, "board": board, "score": score}]}
    response = server.post("/api/v1/games/chess/matches", body)
    assert response.status_code == 201, response.content


def read_all(reader: SignedClient, *, limit: int, after: str | None = None) -> tuple[list[dict], str]:
    got: list[dict] = []
    while True:
        query = f"?limit={limit}" + (f"&after={after}" if after else "")
        response = reader.get(FEED + query)
        assert response.status_code == 200, response.content
        body = response.json()
        if not body["events"]:
            return got, body["next"]
        assert body["next"] == body["events"][-1]["id"]
        got += body["events"]
        after = body["next"]


def _connect() -> psycopg.Connection:
    """A connection of its own to the test database, outside Django: a second writer or reader."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params)


def values_now(game) -> dict[tuple[str, str, str], int]:
    return {
        (v.board.slug, v.window, v.player.external_id): v.value
        for v in PlayerValue.objects.filter(board__game=game).select_related("board", "player")
    }


def test_a_consumer_reads_results_voids_and_freezes_once_each_and_replays_the_values(server, reader, game) -> None:
    submit(server, "m1", "ann", 50)
    submit(server, "m2", "bob", 70)
    submit(server, "m3", "ann", 90)
    submit(server, "m4", "ann", 5, board="points")
    seasons.window_freeze(board=cached_board("chess", board_slug="rating"), window="all", reason="test")
    assert server.post("/api/v1/games/chess/matches/m3/void", {"reason": "aimbot"}).status_code == 200

    feed, last = read_all(reader, limit=3)
    types = [e["type"] for e in feed]
    assert types.count(events.MATCH_ACCEPTED) == 4
    assert [e["data"] for e in feed if e["type"] == events.MATCH_VOIDED] == [{"match_id": "m3", "reason": "aimbot"}]
    assert [e["data"] for e in feed if e["type"].startswith("window.")] == [
        {"board": "rating", "window": "all", "version": 1},
        {"board": "rating", "window": "all", "version": 2},
    ]
    # the void's value change comes after the void and before the new version of the standings
    void_at = types.index(events.MATCH_VOIDED)
    ann_back = next(
        i for i, e in enumerate(feed)
        if e["type"] == events.VALUE_CHANGED and e["data"]["player"] == "ann" and e["data"]["before"] == 90
        and e["data"]["window"] == "all"
    )  # fmt: skip
    assert void_at < ann_back < types.index(events.WINDOW_REFROZEN)
    assert feed[ann_back]["data"] == {"player": "ann", "board": "rating", "window": "all", "before": 90, "after": 50}
    assert feed_replay(feed) == values_now(game)
    assert all(e["at"].endswith("Z") for e in feed)
    # caught up: asking again from the last cursor gives nothing, and the same cursor back
    assert reader.get(f"{FEED}?after={last}").json() == {"events": [], "next": last}
    # an event's id is a cursor too: what follows it, the same whatever the page size
    middle = feed[4]["id"]
    assert read_all(reader, limit=1000, after=middle)[0] == feed[5:]


def test_a_transaction_that_commits_after_a_later_one_is_not_skipped(game, reader) -> None:
    """Two writers, the first to begin committing last, and a consumer polling all along: the
    late one's events come after the cursor the consumer already holds (they take their
    position at commit)."""
    # a chunk as scores.events.events_draft writes one: one event, one line of JSON
    chunk = '{"type": "match.accepted", "at": "2026-11-29T19:00:00Z", "data": {"match_id": "%s"}}'
    draft = "INSERT INTO scores_eventdraft (game_id, events, count) VALUES (%s, %s, 1)"
    with _connect() as first, _connect() as second:
        first.execute(draft, [game.id, chunk % "first"])  # begins, and holds its transaction open
        second.execute(draft, [game.id, chunk % "second"])
        second.commit()
        seen, cursor = read_all(reader, limit=10)
        assert [e["data"]["match_id"] for e in seen] == ["second"]
        first.commit()
    more, _ = read_all(reader, limit=10, after=cursor)
    assert [e["data"]["match_id"] for e in more] == ["first"]


def test_a_rolled_back_transaction_leaves_no_event(game, reader) -> None:
    with _connect() as conn:
        conn.execute(
            'INSERT INTO scores_eventdraft (game_id, events, count) VALUES (%s, \'{"type": "x"}\', 1)',
            [game.id],
        )
        conn.rollback()
    assert read_all(reader, limit=10)[0] == []


def test_keys_games_and_parameters_are_checked_and_change_nothing(server, reader, game) -> None:
    submit(server, "m1", "ann", 50)
    other = GameFactory(slug="other")
    other_key, other_secret = server_key(other, scopes=("events",))
    assert SignedClient(other_key.key_id, other_secret).get(FEED).status_code == 403  # another game's key
    submit_key, submit_secret = server_key(game, scopes=("submit", "moderate"))
    no_scope = SignedClient(submit_key.key_id, submit_secret).get(FEED)  # a key without the events scope
    assert no_scope.status_code == 403 and no_scope.json()["error"]["code"] == "forbidden"
    assert SignedClient(other_key.key_id, other_secret).get("/api/v1/games/other/events").json()["events"] == []
    assert reader.get(FEED, **{"X-Signature": "t=1,v1=00"}).status_code == 401
    from django.test import Client

    assert Client().get(FEED).status_code == 401
    for bad in ("x", "1", "-1-0", "1-", "1-2-3", "99999999999999999999-0", " 1-0", "1-0 ", "１-0"):
        response = reader.get(f"{FEED}?after={quote(bad)}")
        assert response.status_code == 400, bad
        assert response.json()["error"]["code"] == "invalid_cursor"
    for bad in ("0", "1001", "abc", "-5", "1.0", " 1"):
        response = reader.get(f"{FEED}?limit={quote(bad)}")
        assert response.status_code == 400, bad
        assert response.json()["error"]["code"] == "invalid_body"
    assert reader.get(f"{FEED}?after=&limit=").json() == reader.get(FEED).json()  # empty: absent
    feed, _ = read_all(reader, limit=1000)
    assert [e["data"]["match_id"] for e in feed if e["type"] == events.MATCH_ACCEPTED] == ["m1"]
    assert feed_arrivals(feed) == {"m1": 1}


@pytest.fixture
def partitions_restored() -> Iterator[None]:
    """Retention drops today's partition of the feed: the ones a later test expects come back."""
    yield
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {EVENTS}_default")
        for name in day_partitions(EVENTS):
            if name > events.partition_name_of(timezone.now() + timedelta(days=8)):
                cur.execute(f"DROP TABLE {name}")
    event_partitions_ensure()


def test_retention_drops_whole_days_and_expires_their_cursors(server, reader, game, partitions_restored) -> None:
    submit(server, "m1", "ann", 50)
    old, old_last = read_all(reader, limit=1)
    assert old
    later = timezone.now() + timedelta(days=events.settings.EVENTS_RETENTION_DAYS + 2)
    assert events.events_prune(now=later) >= 1
    expired = reader.get(f"{FEED}?after={old[0]['id']}")
    assert expired.status_code == 410 and expired.json()["error"]["code"] == "cursor_expired"
    # the last event dropped is where a consumer that had read everything stands: not expired
    assert reader.get(f"{FEED}?after={old_last}").json() == {"events": [], "next": old_last}
    assert reader.get(FEED).json() == {"events": [], "next": old_last}  # from the oldest kept
    submit(server, "m2", "bob", 70)
    new, _ = read_all(reader, limit=10, after=old_last)
    assert feed_arrivals(new) == {"m2": 1}
    assert read_all(reader, limit=10)[0] == new
    # today's partition is gone, so m2 went to the default one: that is pruned by time too
    assert events.events_prune(now=later) == 1
    assert reader.get(FEED).json()["events"] == []
    assert reader.get(f"{FEED}?after={old_last}").status_code == 410


def test_a_reader_holding_the_feed_delays_a_drop_to_the_next_run(server, reader, game, partitions_restored) -> None:
    submit(server, "m1", "ann", 50)
    later = timezone.now() + timedelta(days=events.settings.EVENTS_RETENTION_DAYS + 2)
    with _connect() as long_reader:
        long_reader.execute("SELECT count(*) FROM scores_event").fetchone()  # its transaction stays open
        assert events.events_prune(now=later) == 0  # waited its second, dropped nothing
        assert read_all(reader, limit=10)[0]  # and the feed answered meanwhile
    assert events.events_prune(now=later) >= 1
