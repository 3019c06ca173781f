"""Lagging reads on a real streaming replica (leaderboard_project/replicas.py, docs/operations.md
"Read replicas"): the web tier as `make run` starts it, on a primary and a replica of its own
(scripts/ha.py StreamingPair, under .local/), never the machine's shared server.

Replay paused on the replica makes it stale on purpose: a read that goes to it misses the newest
write, a read that goes to the primary sees it. A projector process of the pair's applies the
submissions, and the test waits for it (`/healthz`'s ingest lag) before reading."""

from __future__ import annotations

import csv
import http.client
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from django.conf import settings
from leaderboard_client.signing import sign

from scripts import services
from scripts.ha import StreamingPair
from tests.e2e.conftest import WebServer
from tests.polling import until
from tests.projector import processes_stop, projector_start

pytestmark = pytest.mark.slow
MAX_LAG = 6.0  # the server's DATABASE_REPLICA_MAX_LAG: a stale read must happen well within it
GAME = "bench"


@dataclass
class Key:
    key_id: str
    secret: str


@dataclass
class Stack:
    pair: StreamingPair
    web: WebServer
    writer: Key
    other: Key

    def request(self, method: str, path: str, body: object = None, key: Key | None = None) -> tuple[int, str, dict]:
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers |= {"X-Key-Id": key.key_id, "X-Signature": sign(key.secret, method, path, data)}
        conn = http.client.HTTPConnection("127.0.0.1", self.web.port, timeout=10)
        try:
            conn.request(method, path, body=data or None, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.read().decode(), dict(answer.getheaders())
        finally:
            conn.close()

    def submit(self, match_id: str, player: str, score: int) -> None:
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {
            "match_id": match_id,
            "ended_at": at,
            "results": [{"player": player, "board": "rating", "score": score}],
        }
        status, text, _ = self.request("POST", f"/api/v1/games/{GAME}/matches", body, key=self.writer)
        assert status == 201, text
        until(lambda: self.health()["details"]["ingest_lag"]["pending"] == 0, f"{match_id} applied by the projector")

    def health(self) -> dict:
        return json.loads(self.request("GET", "/healthz")[1])

    def exported(self, key: Key) -> set[str]:
        status, text, _ = self.request("GET", f"/api/v1/games/{GAME}/boards/rating/export?window=all", key=key)
        assert status == 200, text
        return {row["player"] for row in csv.DictReader(io.StringIO(text))}

    def player_page(self, player: str) -> int:
        """302 (to sign in: the page is the player's) when the player exists where it was read, else 404."""
        return self.request("GET", f"/games/{GAME}/players/{player}/")[0]

    def replica_health(self) -> str:
        return self.health().get("replica", "")

    def on_replica(self, sql: str) -> None:
        with psycopg.connect(self.pair.url("replica"), autocommit=True) as conn:
            conn.execute(sql)


@pytest.fixture
def stack() -> Iterator[Stack]:
    pair = StreamingPair(services.LOCAL_DIR / f"replica-test-{os.getpid()}")
    pair.create()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test",
        "DATABASE_URL": pair.url("primary"),
        "DATABASE_REPLICA_URL": pair.url("replica"),
        "DATABASE_REPLICA_MAX_LAG": str(MAX_LAG),
        "REDIS_URL": settings.REDIS_URL,
        "ANTICHEAT_ASYNC_CHECKS": "0",
        "DB_POOL_MAX": "4",
        "PYTHONUNBUFFERED": "1",
    }

    def manage(*args: str) -> str:
        cmd = [sys.executable, "manage.py", *args]
        return subprocess.run(cmd, cwd=settings.BASE_DIR, env=env, check=True, capture_output=True, text=True).stdout

    web = WebServer(env)
    projector: list[subprocess.Popen] = []
    try:
        manage("migrate", "--noinput")
        manage("apply_game_config", "bench/game.toml")
        keys = [Key(**{k: v for k, v in json.loads(manage("create_server_key", GAME, name)).items()
                       if k in ("key_id", "secret")}) for name in ("writer", "other")]  # fmt: skip
        web.start()
        projector.append(projector_start(env))
        yield Stack(pair, web, *keys)
    finally:
        processes_stop(projector)
        web.stop()
        pair.destroy()
        import shutil

        shutil.rmtree(pair.root, ignore_errors=True)
        if pair.link.is_symlink():
            pair.link.unlink()


def test_lagging_reads_go_to_the_replica_never_a_callers_own_write_and_fall_back_when_it_lags_or_stops(
    stack: Stack,
) -> None:
    until(lambda: stack.replica_health() == "ok", "the replica measured and usable")
    stack.submit("m-1", "p1", 100)
    until(lambda: stack.player_page("p1") == 302, "p1's page (replicated)")

    # the replica stops replaying: stale from here on
    stack.on_replica("SELECT pg_wal_replay_pause()")
    stack.submit("m-2", "p2", 200)
    wrote_at = time.monotonic()
    assert stack.player_page("p2") == 404  # a player page: the replica, which has no p2 yet
    assert "p2" not in stack.exported(stack.other)  # another game server's export: the replica
    assert "p2" in stack.exported(stack.writer)  # the writer's own export: the primary
    assert time.monotonic() - wrote_at < MAX_LAG  # all of that while the replica was within its bound

    # past the bound, lagging reads go to the primary
    until(lambda: stack.replica_health().startswith("lagging"), "/healthz reporting the replica lagging")
    # (each web process measures on its own: they cross the bound within half a second of each other)
    until(lambda: stack.player_page("p2") == 302, "p2's page from the primary", timeout=5)
    until(lambda: "p2" in stack.exported(stack.other), "the other server's export from the primary", timeout=5)
    status, metrics, _ = stack.request("GET", "/metrics")
    assert status == 200 and "leaderboard_replica_lag_seconds" in metrics and "leaderboard_replica_up 1.0" in metrics

    # caught up again: back to ok
    stack.on_replica("SELECT pg_wal_replay_resume()")
    until(lambda: stack.replica_health() == "ok", "the replica caught up")

    # stopped under reads: no answer is an error, and every one is fresh
    stack.on_replica("SELECT pg_wal_replay_pause()")
    stack.submit("m-3", "p3", 300)
    stack.pair.stop("replica")
    answers = [stack.player_page("p3") for _ in range(5)]
    assert answers == [302] * 5
    assert "p3" in stack.exported(stack.other)
    until(lambda: stack.replica_health().startswith("down"), "/healthz reporting the replica down")
