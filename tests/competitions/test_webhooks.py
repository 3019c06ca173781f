"""Settlement webhooks (docs/api.md §13, docs/competitions.md) to a real HTTP receiver on loopback
that answers 500, then hangs past the timeout, then accepts: every event arrives, in order per
board window, signed, de-duplicable by X-Event-Id; a re-freeze's event carries the changes."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from competitions.models import WebhookDelivery, WebhookEvent
from competitions.webhooks import webhooks_deliver, webhooks_feed_pull
from scores.models import Board, Game, Match
from scores.selectors import cached_board, config_cache_clear
from seasons.services import window_freeze
from tests.conftest import SignedClient
from tests.seasons.conftest import DAY

pytestmark = pytest.mark.usefixtures("real_projector")  # results reach the boards as users' do

WINDOW = f"daily:{DAY}"


class Receiver:
    """A webhook receiver on 127.0.0.1: answers each request with the next of `script`
    (`"500"`, `"hang"`: no answer for `hang_seconds`, `"200"`), then 200 for ever."""

    def __init__(self, script: list[str], hang_seconds: float) -> None:
        self.script, self.hang_seconds = list(script), hang_seconds
        self.received: list[tuple[dict[str, str], bytes, str]] = []  # (headers, body, what it answered)
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    step = receiver.script.pop(0) if receiver.script else "200"
                    receiver.received.append((dict(self.headers), body, step))
                if step == "hang":
                    time.sleep(receiver.hang_seconds)  # the receiver's own stall, not the test's wait
                    return
                self.send_response(int(step))
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/settle"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    r = Receiver(["500", "hang"], hang_seconds=2.0)
    yield r
    r.close()


@pytest.fixture
def settled(day: SignedClient, game, receiver: Receiver, capsys) -> str:
    """The day fixture's game with a webhook to the receiver, rewards on its rating board, and a
    secret (as the command prints it)."""
    Game.objects.filter(pk=game.pk).update(
        webhooks=[{"url": receiver.url, "events": ["window.frozen", "window.refrozen"]}]
    )
    Board.objects.filter(game=game, slug="rating").update(
        rewards=[{"ranks": [1, 1], "reward": "gold"}, {"ranks": [2, 3], "reward": "silver"}]
    )
    config_cache_clear()
    capsys.readouterr()
    call_command("create_webhook_secret", "chess")
    return json.loads(capsys.readouterr().out)["secret"]


def _verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    fields = dict(part.split("=", 1) for part in headers["X-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"])


def _deliver_until(predicate, *, start, step: timedelta, deadline_steps: int = 20) -> None:
    """Run the delivery job at later and later instants (the retries' backoff is in the rows,
    so the test moves the job's clock instead of waiting) until predicate() holds."""
    now = start
    for _ in range(deadline_steps):
        webhooks_deliver(now=now)
        if predicate():
            return
        now += step
    raise AssertionError("the deliveries did not complete")


def test_freeze_and_refreeze_events_arrive_in_order_signed_with_the_changes(
    settled: str, receiver: Receiver, server: SignedClient
) -> None:
    board = cached_board("chess", board_slug="rating")
    window_freeze(board=board, window=WINDOW, reason="window closed")
    first = WebhookEvent.objects.get()  # written with the freeze
    assert (first.type, first.window, first.version) == ("window.frozen", WINDOW, 1)
    t0 = timezone.now()
    webhooks_deliver(now=t0)  # the receiver answers 500
    d = WebhookDelivery.objects.get()
    assert (d.state, d.attempts, d.last_status) == ("pending", 1, 500)
    assert d.next_attempt_at - t0 <= timedelta(seconds=60)  # the first retry within 60 s

    # a void re-freezes while the first event is still undelivered: its event waits behind it
    match = Match.objects.get(match_id="d2")
    assert server.post(f"/api/v1/games/chess/matches/{match.match_id}/void", {"reason": "cheat"}).status_code == 200
    second = WebhookEvent.objects.get(version=2)
    assert second.type == "window.refrozen"
    webhooks_deliver(now=t0)  # nothing due: the first waits for its retry, the second behind it
    assert len(receiver.received) == 1

    _deliver_until(
        lambda: WebhookDelivery.objects.filter(state="delivered").count() == 2,
        start=t0 + timedelta(seconds=31),
        step=timedelta(seconds=120),
    )
    steps = [(h["X-Event-Id"], answer) for h, _, answer in receiver.received]
    assert steps == [(str(first.id), "500"), (str(first.id), "hang"), (str(first.id), "200"), (str(second.id), "200")]
    assert all(_verify(settled, h, body) for h, body, _ in receiver.received)
    assert {b for _, b, _ in receiver.received[:3]} == {first.body.encode()}  # the same bytes every time

    v1 = json.loads(receiver.received[2][1])
    assert v1["id"] == str(first.id) and v1["board"] == "rating" and v1["window"] == WINDOW
    assert v1["standings_url"].endswith(f"/api/v1/games/chess/boards/rating/standings/{WINDOW}?version=1")
    assert v1["rewards"] == [
        {"player": "early", "rank": 1, "reward": "gold"},
        {"player": "p0", "rank": 2, "reward": "silver"},
        {"player": "p1", "rank": 3, "reward": "silver"},
    ]
    assert "changes" not in v1
    v2 = json.loads(receiver.received[3][1])
    assert v2["version"] == 2 and [r["player"] for r in v2["rewards"]] == ["p0", "p1", "p2"]
    changes = {c["player"]: c for c in v2["changes"]}
    assert changes["early"] == {
        "player": "early",
        "from_rank": 1,
        "to_rank": None,
        "reward_before": "gold",
        "reward_after": None,
    }
    assert changes["p0"] | {} == {
        "player": "p0",
        "from_rank": 2,
        "to_rank": 1,
        "reward_before": "silver",
        "reward_after": "gold",
    }
    assert changes["p2"]["reward_before"] is None and changes["p2"]["reward_after"] == "silver"
    assert len(changes) == 10  # everyone moved up one place


def test_no_webhook_no_event(day: SignedClient, game) -> None:
    window_freeze(board=cached_board("chess", board_slug="rating"), window=WINDOW, reason="window closed")
    assert WebhookEvent.objects.count() == 0


def test_the_admin_lists_deliveries_and_redelivers(settled: str, receiver: Receiver) -> None:
    window_freeze(board=cached_board("chess", board_slug="rating"), window=WINDOW, reason="window closed")
    _deliver_until(
        lambda: WebhookDelivery.objects.filter(state="delivered").exists(),
        start=timezone.now(),
        step=timedelta(seconds=120),
    )
    admin = User.objects.create_superuser("op", "op@example.com", "pw")
    client = Client()
    client.force_login(admin)
    page = client.get("/admin/competitions/webhookdelivery/")
    assert page.status_code == 200 and receiver.url.encode() in page.content
    d = WebhookDelivery.objects.get()
    r = client.post(
        "/admin/competitions/webhookdelivery/", {"action": "redeliver", "_selected_action": [d.pk]}, follow=True
    )
    assert r.status_code == 200
    d.refresh_from_db()
    assert d.state == "pending"
    before = len(receiver.received)
    webhooks_deliver()
    assert len(receiver.received) == before + 1
    assert receiver.received[-1][0]["X-Event-Id"] == receiver.received[0][0]["X-Event-Id"]


_TOML = """
[game]
slug = "arena"
name = "Arena"

[[boards]]
slug = "cup"
name = "Cup"
max_score = 100
rewards = REWARDS

[[webhooks]]
url = URL
events = ["window.frozen"]
"""


def test_rewards_and_webhooks_are_applied_and_bad_ones_refused_naming_the_key(transactional_db) -> None:
    from scores.config import ConfigError, parse_game_config
    from scores.services import game_config_apply

    good = _TOML.replace("REWARDS", '[{ranks = "1", reward = "gold"}, {top_percent = 10, reward = "badge"}]')
    game_config_apply(parse_game_config(good.replace("URL", '"https://backend.example.com/settle"')))
    assert Game.objects.get(slug="arena").webhooks == [
        {"url": "https://backend.example.com/settle", "events": ["window.frozen"]}
    ]
    assert Board.objects.get(slug="cup").rewards == [
        {"ranks": [1, 1], "reward": "gold"},
        {"top_percent": 10, "reward": "badge"},
    ]
    for text, key in [
        (good.replace("URL", '"ftp://x"'), "webhooks[0].url"),
        (good.replace("URL", '"https://x"').replace('["window.frozen"]', '["paid"]'), "webhooks[0].events"),
        (
            _TOML.replace("URL", '"https://x"').replace("REWARDS", '[{ranks = "3-2", reward = "g"}]'),
            "boards[0].rewards[0].ranks",
        ),
        (
            _TOML.replace("URL", '"https://x"').replace("REWARDS", '[{ranks = "1", top_percent = 5, reward = "g"}]'),
            "boards[0].rewards[0]",
        ),
    ]:
        with pytest.raises(ConfigError) as exc:
            parse_game_config(text)
        assert exc.value.key == key


def test_a_receiver_that_never_accepts_gets_24_hours_of_retries_then_the_delivery_fails(
    settled: str, receiver: Receiver
) -> None:
    """docs/competitions.md "Delivery" (and docs/api.md §13): anything but a 2xx retries after
    30 s, then 60 s, 120 s, ... at most an hour apart, until 24 h after the event; then the
    delivery is `failed`. The job's clock is moved to each retry's time (`webhooks_deliver(now=)`)
    instead of waiting; the day is counted from the stored event, not from today's date."""
    receiver.script[:] = ["500"] * 100  # this receiver never accepts
    window_freeze(board=cached_board("chess", board_slug="rating"), window=WINDOW, reason="window closed")
    event = WebhookEvent.objects.get()
    gave_up = event.created_at + timedelta(hours=24)
    attempts_at = []
    d = WebhookDelivery.objects.get()
    while d.state == "pending":
        assert len(attempts_at) < 100, "still pending after 100 attempts"
        now = d.next_attempt_at  # the worker's next run that finds it due
        webhooks_deliver(now=now)
        attempts_at.append(now)
        d.refresh_from_db()

    assert (d.state, d.attempts, d.last_status) == ("failed", len(attempts_at), 500)
    assert len(receiver.received) == d.attempts  # every attempt reached the receiver
    assert {h["X-Event-Id"] for h, _, _ in receiver.received} == {str(event.id)}
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(attempts_at)]
    assert gaps[:8] == [30, 60, 120, 240, 480, 960, 1920, 3600]
    assert set(gaps[8:]) == {3600}  # at most an hour apart
    # retried for the whole day, never past it: the next retry would have fallen after 24 h
    assert gave_up - timedelta(hours=1) < attempts_at[-1] <= gave_up
    assert attempts_at[-1] + timedelta(seconds=3600) > gave_up

    # failed is final: no later run sends it again
    webhooks_deliver(now=gave_up + timedelta(hours=1))
    d.refresh_from_db()
    assert d.state == "failed" and len(receiver.received) == d.attempts


def test_a_hook_subscribed_to_match_decisions_gets_each_from_the_events_feed_once(
    settled: str, receiver: Receiver, server: SignedClient, game
) -> None:
    """docs/api.md §13.1: [[webhooks]] may subscribe to the feed's low-volume types; those
    arrive as the settlement events do (signed, retried, de-duplicable), each once, in order.
    A new subscription starts where the feed stands: the decisions made before are not sent."""
    assert server.post("/api/v1/games/chess/matches/d1/void", {"reason": "before the subscription"}).status_code == 200
    Game.objects.filter(pk=game.pk).update(webhooks=[{"url": receiver.url, "events": ["match.voided", "match.held"]}])
    config_cache_clear()
    assert webhooks_feed_pull() == 0  # first seen: the cursor starts at the feed's end
    late = {
        "match_id": "d3",
        "ended_at": f"{DAY}T11:00:00Z",
        "results": [{"player": "p9", "board": "rating", "score": 5}],
    }
    assert server.post("/api/v1/games/chess/matches", late).status_code == 201
    assert server.post("/api/v1/games/chess/matches/d2/void", {"reason": "aimbot"}).status_code == 200
    assert server.post("/api/v1/games/chess/matches/d3/void", {"reason": "wallhack"}).status_code == 200
    assert webhooks_feed_pull() == 2
    assert webhooks_feed_pull() == 0  # each event once, however often the pull runs
    _deliver_until(
        lambda: WebhookDelivery.objects.filter(state="delivered").count() == 2,
        start=timezone.now(),
        step=timedelta(seconds=120),
    )
    delivered = [json.loads(body) for _, body, answer in receiver.received if answer == "200"]
    assert [(b["type"], b["data"]) for b in delivered] == [
        ("match.voided", {"match_id": "d2", "reason": "aimbot"}),
        ("match.voided", {"match_id": "d3", "reason": "wallhack"}),
    ]
    assert all(_verify(settled, h, body) for h, body, _ in receiver.received)
    assert all(b["game"] == "chess" and b["feed_id"] and b["at"].endswith("Z") for b in delivered)
    assert {h["X-Event-Id"] for h, _, _ in receiver.received} == {b["id"] for b in delivered}


def test_the_feed_only_types_cannot_be_subscribed_to(transactional_db) -> None:
    from scores.config import ConfigError, parse_game_config

    toml = _TOML.replace("URL", '"https://backend.example.com/hooks"').replace("REWARDS", "[]")
    for kind in ("match.accepted", "value.changed"):
        with pytest.raises(ConfigError) as exc:
            parse_game_config(toml.replace('["window.frozen"]', f'["{kind}"]'))
        assert exc.value.key == "webhooks[0].events" and "events feed only" in str(exc.value)
    assert parse_game_config(toml.replace('["window.frozen"]', '["league.moved", "match.approved"]'))
