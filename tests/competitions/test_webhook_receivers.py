"""Webhook receivers that cannot reach inside or stall anyone else (docs/competitions.md,
"Receivers" and "Delivery"; docs/api.md §13): a URL on a loopback, private or link-local address,
or a name resolving to one, is refused when the configuration is applied and again at delivery
(nothing sent); redirects are not followed; one attempt ends within WEBHOOK_TIMEOUT_SECONDS in all
and reads at most 64 KiB; a receiver that never answers holds only its own game's deliveries.

The receivers are real sockets on loopback speaking HTTP/1.1 by hand, so each can misbehave
exactly: accept and never answer, trickle its headers, or stream an answer without end."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from competitions.models import WebhookDelivery
from competitions.webhooks import ANSWER_MAX_BYTES, webhook_secret_create, webhooks_deliver
from scores.models import Game
from scores.selectors import cached_board, config_cache_clear
from seasons.services import window_freeze
from tests.factories import BoardFactory, GameFactory

pytestmark = pytest.mark.usefixtures("transactional_db")

Behave = Callable[["RawReceiver", socket.socket, bytes], None]

WINDOW = "daily:2026-11-27"
DEADLINE = 3.0  # WEBHOOK_TIMEOUT_SECONDS here: the attempts' deadline, in all


class RawReceiver:
    """An HTTP receiver on 127.0.0.1 whose `behave(receiver, conn, request)` answers each request
    as it likes; `requests` holds what arrived, `arrived` is set at the first, `release` ends stalls."""

    def __init__(self, behave: Behave) -> None:
        self.requests: list[bytes] = []
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.written = 0  # bytes of answer written before the connection broke or was released
        self.finished = threading.Event()  # a request's handling ended
        receiver = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = self.request.recv(65536)
                    if not chunk:
                        return
                    head += chunk
                headers, _, body = head.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in headers.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(body) < length:
                    body += self.request.recv(65536)
                receiver.requests.append(head)
                receiver.arrived.set()
                try:
                    behave(receiver, self.request, head)
                except OSError:
                    pass  # the client went away: what the streaming receivers wait for
                finally:
                    receiver.finished.set()

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/settle"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers() -> Iterator[Callable[[Behave], RawReceiver]]:
    made: list[RawReceiver] = []

    def make(behave: Behave) -> RawReceiver:
        made.append(RawReceiver(behave))
        return made[-1]

    yield make
    for r in made:
        r.close()


def answer(status: int, extra: str = "") -> Behave:
    def behave(receiver: RawReceiver, conn: socket.socket, request: bytes) -> None:
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n{extra}\r\nok".encode())

    return behave


def _hooked_game(slug: str, urls: list[str]) -> Game:
    game = GameFactory(slug=slug)
    BoardFactory(game=game, slug="rating")
    Game.objects.filter(pk=game.pk).update(webhooks=[{"url": u, "events": ["window.frozen"]} for u in urls])
    config_cache_clear()
    webhook_secret_create(game=game)
    return game


def _freeze(slug: str) -> None:
    """A first freeze of the game's rating board: one event, a delivery per subscribed URL."""
    window_freeze(board=cached_board(slug, board_slug="rating"), window=WINDOW, reason="window closed")


def _until(condition: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)  # polling another thread's progress, with a deadline


# --- refused at apply ---------------------------------------------------------------------

_TOML = """
[game]
slug = "arena"
name = "Arena"

[[boards]]
slug = "cup"
name = "Cup"
max_score = 100

[[webhooks]]
url = "URL"
"""

PRIVATE_URLS = [
    "http://127.0.0.1:9/hooks",
    "http://10.1.2.3/hooks",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:8080/hooks",
    "http://[::ffff:127.0.0.1]/hooks",  # IPv4-mapped IPv6: judged by the IPv4 address
    "http://localhost:8080/hooks",
    "http://2130706433/hooks",  # a name getaddrinfo resolves to 127.0.0.1
    "https://192.168.1.20/hooks",
    "http://224.0.0.1/hooks",  # multicast
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_a_private_receiver_is_refused_at_apply_naming_the_key_and_nothing_is_applied(url: str, tmp_path: Path) -> None:
    path = tmp_path / "arena.toml"
    path.write_text(_TOML.replace("URL", url))
    with pytest.raises(CommandError) as refused:
        call_command("apply_game_config", str(path))
    message = str(refused.value)
    assert "refused, nothing applied" in message
    assert "webhooks[0].url: a receiver on a public address is required:" in message
    assert "not a public address" in message or "is a loopback name" in message
    assert not Game.objects.filter(slug="arena").exists()


def test_with_webhook_allow_private_a_local_receiver_is_applied(settings, tmp_path: Path) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    path = tmp_path / "arena.toml"
    path.write_text(_TOML.replace("URL", "http://127.0.0.1:9/hooks"))
    call_command("apply_game_config", str(path))
    assert Game.objects.get(slug="arena").webhooks[0]["url"] == "http://127.0.0.1:9/hooks"


# --- refused at delivery ------------------------------------------------------------------


def test_a_private_receiver_is_refused_at_delivery_nothing_sent_the_attempt_recorded(settings, receivers) -> None:
    """URLs stored while they were allowed (WEBHOOK_ALLOW_PRIVATE on where the file was applied,
    or a name that resolved to a public address then) are checked again at every attempt."""
    settings.WEBHOOK_TIMEOUT_SECONDS = DEADLINE
    local = receivers(answer(200))
    urls = [
        local.url,
        f"http://localhost:{local.port}/hooks/settle",
        f"http://2130706433:{local.port}/hooks/settle",  # resolves to 127.0.0.1 at delivery
        f"http://[::ffff:127.0.0.1]:{local.port}/hooks/settle",
        "http://10.1.2.3/hooks",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/hooks",
    ]
    _hooked_game("arena", urls)
    _freeze("arena")
    now = timezone.now()
    assert webhooks_deliver(now=now) == 0

    rows = {d.url: d for d in WebhookDelivery.objects.all()}
    assert set(rows) == set(urls)
    for url, d in rows.items():
        assert (d.state, d.attempts, d.last_status) == ("pending", 1, None), url
        assert d.last_response.startswith("refused, nothing sent: "), (url, d.last_response)
        assert "not a public address" in d.last_response or "is a loopback name" in d.last_response
        assert d.next_attempt_at == now + timedelta(seconds=30)  # a failed attempt: retried
    assert local.requests == []  # nothing reached the receiver

    # the same deliveries, allowed: the local receiver gets them (its three IPv4 spellings)
    settings.WEBHOOK_ALLOW_PRIVATE = True
    WebhookDelivery.objects.exclude(url__in=urls[:3]).delete()
    assert webhooks_deliver(now=now + timedelta(seconds=30)) == 3
    assert len(local.requests) == 3


def test_a_redirect_is_not_followed_and_counts_as_a_failed_attempt(settings, receivers) -> None:
    settings.WEBHOOK_TIMEOUT_SECONDS = DEADLINE
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receivers are on loopback
    elsewhere = receivers(answer(200))
    redirecting = receivers(answer(302, f"Location: {elsewhere.url}\r\n"))
    _hooked_game("arena", [redirecting.url])
    _freeze("arena")
    now = timezone.now()
    assert webhooks_deliver(now=now) == 0
    d = WebhookDelivery.objects.get()
    assert (d.state, d.attempts, d.last_status) == ("pending", 1, 302)
    assert len(redirecting.requests) == 1 and elsewhere.requests == []


# --- the deadline and the answer's size ----------------------------------------------------


def stall(receiver: RawReceiver, conn: socket.socket, request: bytes) -> None:
    receiver.release.wait()  # accepts, reads the request, never answers


def test_a_receiver_that_never_answers_holds_only_its_own_games_deliveries(settings, receivers) -> None:
    """Game A's receiver accepts and never answers. While A's attempt is stuck, game B's event,
    frozen after A's attempt began, is delivered and recorded; A's attempt ends at the deadline as
    a failed attempt, retried 30 s later."""
    settings.WEBHOOK_TIMEOUT_SECONDS = DEADLINE
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receivers are on loopback
    stuck = receivers(stall)
    quick = receivers(answer(200))
    _hooked_game("arena", [stuck.url])
    _hooked_game("brawl", [quick.url])
    _freeze("arena")

    delivered: list[int] = []
    started = time.monotonic()
    run = threading.Thread(target=lambda: delivered.append(webhooks_deliver()), daemon=True)
    run.start()  # as the webhooks worker runs it
    try:
        assert stuck.arrived.wait(DEADLINE), "game A's attempt never reached its receiver"
        _freeze("brawl")  # game B's event, while A's attempt is in flight
        _until(
            lambda: WebhookDelivery.objects.filter(url=quick.url, state="delivered").exists(),
            "game B's delivery was not delivered",
        )
        b_done = time.monotonic() - started
        assert run.is_alive() and not stuck.release.is_set()  # A's attempt still stuck meanwhile
        assert b_done < DEADLINE  # B never waited for A's deadline
        assert len(quick.requests) == 1
    finally:
        run.join(DEADLINE + 10)
    elapsed = time.monotonic() - started
    assert not run.is_alive()
    assert DEADLINE - 0.1 <= elapsed < DEADLINE + 2.0  # A's attempt ended at its deadline
    assert delivered == [1]

    a = WebhookDelivery.objects.get(url=stuck.url)
    assert (a.state, a.attempts, a.last_status) == ("pending", 1, None)
    assert a.last_response == f"timed out: no complete answer within {DEADLINE:g} s"
    assert a.next_attempt_at - a.last_attempt_at == timedelta(seconds=30)  # retried
    assert a.claim is None


def endless(pause: float, chunk: bytes, head: bytes) -> Behave:
    def behave(receiver: RawReceiver, conn: socket.socket, request: bytes) -> None:
        conn.sendall(head)
        while not receiver.release.wait(pause):
            conn.sendall(chunk)  # raises once the client has gone
            receiver.written += len(chunk)

    return behave


def test_an_endless_answer_is_read_to_64_kib_then_dropped(settings, receivers) -> None:
    settings.WEBHOOK_TIMEOUT_SECONDS = DEADLINE
    settings.WEBHOOK_ALLOW_PRIVATE = True
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
    streaming = receivers(endless(0.002, b"x" * 1024, head))
    _hooked_game("arena", [streaming.url])
    _freeze("arena")
    started = time.monotonic()
    assert webhooks_deliver() == 1  # the status was a 2xx: delivered
    assert time.monotonic() - started < DEADLINE  # stopped by the size, not the deadline
    d = WebhookDelivery.objects.get()
    assert (d.state, d.attempts, d.last_status) == ("delivered", 1, 200)
    assert d.last_response.startswith("200 xxx") and d.last_response.endswith("[answer cut at 64 KiB]")
    # the receiver's writes failed soon after 64 KiB were read: the rest was never taken
    assert streaming.finished.wait(DEADLINE), "the receiver could still write"
    assert ANSWER_MAX_BYTES <= streaming.written < 2 * ANSWER_MAX_BYTES


@pytest.mark.parametrize(
    "head, chunk",
    [
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"x" * 10),  # an answer that trickles for ever
        (b"HTTP/1.1 200 OK\r\n", b"X"),  # headers that trickle for ever: each read is quick, none ends
    ],
    ids=["body", "headers"],
)
def test_a_trickling_receiver_is_cut_off_at_the_deadline(settings, receivers, head: bytes, chunk: bytes) -> None:
    settings.WEBHOOK_TIMEOUT_SECONDS = DEADLINE
    settings.WEBHOOK_ALLOW_PRIVATE = True
    trickling = receivers(endless(0.1, chunk, head))
    _hooked_game("arena", [trickling.url])
    _freeze("arena")
    started = time.monotonic()
    assert webhooks_deliver() == 0
    assert DEADLINE - 0.1 <= time.monotonic() - started < DEADLINE + 2.0
    d = WebhookDelivery.objects.get()
    assert (d.state, d.attempts, d.last_status) == ("pending", 1, None)
    assert d.last_response == f"timed out: no complete answer within {DEADLINE:g} s"
