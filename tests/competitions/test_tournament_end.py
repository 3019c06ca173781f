"""A tournament's end (docs/competitions.md): once its end and the game's grace have passed, the
close job freezes its final standings and writes one `tournament.ended` event in the freeze's
transaction, delivered through the outbox to a real HTTP receiver on loopback (which first
answers 500), signed, with the rewards; running the job again sends nothing more, and a void
after the end sends a `window.refrozen` with exactly the changes, after it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from competitions.models import WebhookDelivery, WebhookEvent
from competitions.services import tournaments_close
from seasons.models import WindowFreeze
from tests.competitions.test_webhooks import Receiver, _deliver_until, _verify
from tests.conftest import SignedClient
from tests.factories import GameFactory, server_key, tournament_board
from tests.projector import projected

pytestmark = pytest.mark.usefixtures("real_projector")  # results reach the boards as users' do

REWARDS = [{"ranks": [1, 1], "reward": "gold"}, {"ranks": [2, 3], "reward": "silver"}]


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    r = Receiver(["500"], hang_seconds=0)
    yield r
    r.close()


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture
def cup(transactional_db, receiver: Receiver, capsys) -> tuple[SignedClient, str, datetime]:
    """A tournament that ended an hour ago, five players, a webhook for every event type."""
    now = timezone.now().replace(microsecond=0)
    ends = now - timedelta(hours=1)
    game = GameFactory(
        slug="arena",
        webhooks=[{"url": receiver.url, "events": ["window.frozen", "window.refrozen", "tournament.ended"]}],
    )
    tournament_board(game, starts_at=ends - timedelta(days=2), ends_at=ends, board={"rewards": REWARDS})
    key, secret = server_key(game, scopes=("submit", "moderate"))
    server = SignedClient(key.key_id, secret)
    for i, score in enumerate([50, 40, 30, 20, 10]):
        body = {
            "match_id": f"m{i}",
            "ended_at": _iso(ends - timedelta(hours=5 - i)),
            "results": [{"player": f"p{i}", "board": "cup", "score": score}],
        }
        r = server.post("/api/v1/games/arena/matches", body)
        assert r.status_code == 201, r.content
    projected()
    capsys.readouterr()
    call_command("create_webhook_secret", "arena")
    return server, json.loads(capsys.readouterr().out)["secret"], ends


def test_a_tournament_end_sends_one_event_then_a_void_sends_the_changes(cup, receiver: Receiver) -> None:
    server, secret, ends = cup
    grace = timedelta(seconds=300)  # the game's close_grace_seconds (its default)
    assert tournaments_close(now=ends + grace - timedelta(seconds=1)) == []  # late results may still arrive
    assert WebhookEvent.objects.count() == 0

    assert tournaments_close(now=ends + grace) == ["arena/cup"]
    assert tournaments_close(now=ends + grace + timedelta(minutes=5)) == []  # one end, one event
    event = WebhookEvent.objects.get()
    assert (event.type, event.window, event.version) == ("tournament.ended", "all", 1)
    assert WindowFreeze.objects.get(board__slug="cup").entries == 5

    t0 = timezone.now()
    _deliver_until(
        lambda: WebhookDelivery.objects.filter(state="delivered").count() == 1,
        start=t0,
        step=timedelta(seconds=120),
    )
    assert [(h["X-Event-Id"], h["X-Event-Type"], step) for h, _, step in receiver.received] == [
        (str(event.id), "tournament.ended", "500"),
        (str(event.id), "tournament.ended", "200"),
    ]
    assert all(_verify(secret, h, body) for h, body, _ in receiver.received)
    ended = json.loads(receiver.received[-1][1])
    assert ended["type"] == "tournament.ended" and ended["board"] == "cup" and ended["window"] == "all"
    assert ended["rewards"] == [
        {"player": "p0", "rank": 1, "reward": "gold"},
        {"player": "p1", "rank": 2, "reward": "silver"},
        {"player": "p2", "rank": 3, "reward": "silver"},
    ]
    assert ended["standings_url"].endswith("/api/v1/games/arena/boards/cup/standings/all?version=1")
    assert "changes" not in ended

    # the winner cheated: the void re-freezes the final standings, and the receiver is told who moved
    assert server.post("/api/v1/games/arena/matches/m0/void", {"reason": "cheat"}).status_code == 200
    refrozen = WebhookEvent.objects.get(version=2)
    assert refrozen.type == "window.refrozen"
    _deliver_until(
        lambda: WebhookDelivery.objects.filter(state="delivered").count() == 2,
        start=timezone.now(),
        step=timedelta(seconds=120),
    )
    assert receiver.received[-1][0]["X-Event-Id"] == str(refrozen.id)
    body = json.loads(receiver.received[-1][1])
    assert body["changes"] == [
        {"player": "p1", "from_rank": 2, "to_rank": 1, "reward_before": "silver", "reward_after": "gold"},
        {"player": "p2", "from_rank": 3, "to_rank": 2, "reward_before": "silver", "reward_after": "silver"},
        {"player": "p3", "from_rank": 4, "to_rank": 3, "reward_before": None, "reward_after": "silver"},
        {"player": "p4", "from_rank": 5, "to_rank": 4, "reward_before": None, "reward_after": None},
        {"player": "p0", "from_rank": 1, "to_rank": None, "reward_before": "gold", "reward_after": None},
    ]
    assert tournaments_close(now=timezone.now()) == []  # a re-freeze is no second end


def test_a_receiver_not_subscribed_to_tournament_ends_gets_none(cup, receiver: Receiver) -> None:
    from scores.models import Game
    from scores.selectors import config_cache_clear

    Game.objects.filter(slug="arena").update(webhooks=[{"url": receiver.url, "events": ["window.frozen"]}])
    config_cache_clear()
    _, _, ends = cup
    assert tournaments_close(now=ends + timedelta(hours=1)) == ["arena/cup"]
    assert WindowFreeze.objects.filter(board__slug="cup").count() == 1  # frozen all the same
    assert WebhookEvent.objects.count() == 0  # and no window.frozen instead: the end is its own event


def test_one_games_failed_end_leaves_the_other_tournaments_ending(transactional_db) -> None:
    """A game whose tournament cannot be frozen (its stored webhook list is damaged, so the
    freeze's outbox write raises) does not stop another game's tournament from ending; the next
    run ends it once it can (docs/windows.md, "Closing and freezing")."""
    from scores.models import Game
    from scores.selectors import config_cache_clear

    ends = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    for slug in ("broken", "fine"):
        tournament_board(GameFactory(slug=slug), starts_at=ends - timedelta(days=1), ends_at=ends)
    Game.objects.filter(slug="broken").update(webhooks=[{"url": "http://receiver.example/"}])  # no "events"
    config_cache_clear()
    assert tournaments_close(now=ends + timedelta(hours=1)) == ["fine/cup"]
    assert not WindowFreeze.objects.filter(board__game__slug="broken").exists()

    Game.objects.filter(slug="broken").update(webhooks=[])
    config_cache_clear()
    assert tournaments_close(now=ends + timedelta(hours=1)) == ["broken/cup"]
