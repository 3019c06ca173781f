"""Group commit through a real `manage.py append_service` process (scores/ingest/gather.py): a
kill -9 of the service while it holds a gathered group in its open transaction loses nothing
acknowledged and leaves nothing half-stored; the requests whose group died are answered 503
`overloaded` with Retry-After, and the same bodies sent again once the supervisor has restarted
the service are stored, each once."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

from scores.api.match_body import match_parse
from scores.ingest import gather
from scores.locks import INGEST
from scores.models import Match, Pending, PlayerValue, Result
from tests.conftest import SignedClient
from tests.factories import BoardFactory, GameFactory, server_key
from tests.polling import until
from tests.projector import REPO, database_url, process_env, processes_stop, projected

APP_NAME = "leaderboard-append-under-test"
URL = "/api/v1/games/gk/matches"
ENDED = "2026-11-28T10:00:00Z"


def _body(match_id: str, *results: tuple[str, int]) -> dict[str, Any]:
    return {
        "match_id": match_id,
        "ended_at": ENDED,
        "results": [{"player": p, "board": "rating", "score": s} for p, s in results],
    }


@pytest.fixture
def service_process(transactional_db, settings) -> Iterator[Callable[..., subprocess.Popen]]:
    """Starts `manage.py append_service [args]` on a socket of its own; the test's requests hand
    their matches to it (WEB_APPEND_SERVICE on)."""
    path = Path(tempfile.mkdtemp(prefix="lb-gather-")) / "append.sock"
    settings.WEB_APPEND_SERVICE = True
    settings.WEB_APPEND_SOCKET = str(path)
    settings.WEB_APPEND_TIMEOUT_MS = 60_000  # the test's long gather windows: a request waits them out
    env = {**process_env(settings, APP_NAME), "WEB_APPEND_SOCKET": str(path)}
    started: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "append_service", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(proc)
        until(lambda: _listening(path) or proc.poll() is not None, "the append service listening", timeout=30)
        assert proc.poll() is None, "the append service exited"
        return proc

    yield start
    processes_stop(started)


def _listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _service_waits_on_a_lock() -> bool:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
            " AND wait_event_type = 'Lock'",
            [APP_NAME],
        )
        return bool(cur.fetchone()[0])


@pytest.fixture
def blocking_connection(service_process, settings) -> Iterator[psycopg.Connection]:
    """A connection of the test's own, closed before the database is emptied even when the test
    fails holding a lock on it (the flush would wait for it)."""
    conn = psycopg.connect(database_url(settings))
    yield conn
    conn.close()


def test_kill_9_of_the_service_holding_a_group_loses_nothing_acknowledged(
    service_process, blocking_connection, real_projector, settings
) -> None:
    game = GameFactory(slug="gk")
    BoardFactory(game=game, slug="rating")
    key, secret = server_key(game, scopes=("submit",))
    server = SignedClient(key.key_id, secret)
    service = service_process("--gather-ms", "5000", "--gather-max", "5")

    assert server.post(URL, _body("warm", ("hot", 1))).status_code == 201

    # hold the group in flight: with the game's ingest lock taken exclusively (as a window's
    # freeze takes it, scores/locks.py), the group's append statement waits inside the service's
    # open transaction
    blocker = blocking_connection
    blocker.execute("SELECT pg_advisory_xact_lock(%s, %s)", [INGEST, game.id])

    bodies = [_body(f"m{i}", ("hot", 10 + i), (f"p{i}", 100 + i)) for i in range(4)]
    answers: list[Any] = [None] * len(bodies)

    def send(i: int) -> None:
        try:
            answers[i] = SignedClient(key.key_id, secret).post(URL, bodies[i])
        finally:
            gather._disconnect()
            connection.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    # and a caller that hands a match over and never gets an answer: nothing of it may stay
    orphan = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    orphan.connect(settings.WEB_APPEND_SOCKET)
    _hand(orphan, key.pk, _body("lost", ("hot", 99), ("q", 7)))

    until(_service_waits_on_a_lock, "the service's group waiting inside its transaction", timeout=30)
    assert Match.objects.filter(game=game).count() == 1  # the group is not visible: not committed

    service.send_signal(signal.SIGKILL)
    service.wait(timeout=10)
    with pytest.raises(ConnectionError):
        gather._recv(orphan)  # no answer: the caller does not know it was stored, and it was not
    orphan.close()
    blocker.rollback()  # the dead service's statement goes on, and its transaction ends unfinished
    for t in threads:
        t.join(timeout=60)

    # every request answered 503: the service, their only store, went before it answered
    for a in answers:
        assert a.status_code == 503 and a.json()["error"]["code"] == "overloaded", a.content
        assert a["Retry-After"] == "1"
    assert set(Match.objects.filter(game=game).values_list("match_id", flat=True)) == {"warm"}
    assert not Result.objects.filter(player__external_id="q").exists()

    # the supervisor's restart: a new service takes the socket the dead one left, and the game
    # servers send the same bodies again
    service_process("--gather-ms", "1")
    for body in bodies:
        again = server.post(URL, body)
        assert again.status_code == 201 and again.json()["duplicate"] is False, again.content
    assert server.post(URL, bodies[0]).json()["duplicate"] is True
    stored = {m.match_id: m for m in Match.objects.filter(game=game)}
    assert set(stored) == {"warm", "m0", "m1", "m2", "m3"}  # each once (the unique key), "lost" nowhere
    for i in range(4):
        results = Result.objects.filter(match=stored[f"m{i}"])
        assert sorted((r.player.external_id, r.score) for r in results) == sorted([("hot", 10 + i), (f"p{i}", 100 + i)])
    assert not Result.objects.filter(player__external_id="q").exists()
    projected()
    assert not Pending.objects.exists()
    values = dict(
        PlayerValue.objects.filter(board__slug="rating", window="all").values_list("player__external_id", "value")
    )
    assert values == {"hot": 13, **{f"p{i}": 100 + i for i in range(4)}}


def _hand(sock: socket.socket, key_pk: int, body: dict[str, Any]) -> None:
    """What a web process sends the service for a match (scores/ingest/gather.py's wire)."""
    match = match_parse(body)
    gather._send(sock, {"game": "gk", "key": key_pk, "match": gather._match_encode(match)})
