"""The projector as the real process `make run` starts (`manage.py projector`), killed with
SIGKILL in the middle of a batch: every acknowledged result is applied exactly once afterwards,
totals included, and /healthz says when no projector runs."""

from __future__ import annotations

import signal
from pathlib import Path

from django.db import connection
from django.test import Client

from boards import selectors
from boards.services import outbox_drain
from scores.models import PlayerValue
from scores.projection import pending_lag
from scores.selectors import cached_board
from tests.conftest import SignedClient
from tests.polling import until
from tests.scores.conftest import APP_NAME

REPO = Path(__file__).resolve().parents[2]
BATCHES, PER_BATCH, PLAYERS = 12, 1000, 50


def _projector_writing() -> bool:
    """A projector backend is inside a transaction that has written (claimed pending rows)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
            " AND backend_xid IS NOT NULL",
            [APP_NAME],
        )
        return cur.fetchone()[0] > 0


def _healthz_projector() -> str:
    return Client().get("/healthz").json()["projector"]


def test_a_projector_killed_mid_batch_loses_nothing_and_counts_nothing_twice(
    server: SignedClient, game, projector_process
) -> None:
    sent = 0
    for b in range(BATCHES):
        matches = [
            {
                "match_id": f"b{b}-{i}",
                "ended_at": "2026-11-29T18:59:58Z",
                "results": [{"player": f"p{i % PLAYERS}", "board": "points", "score": 1 + (i % 7)}],
            }
            for i in range(PER_BATCH)
        ]
        response = server.post("/api/v1/games/chess/matches/batch", {"matches": matches})
        assert response.status_code == 200
        assert all(r["status"] == "accepted" for r in response.json()["results"])
        sent += len(matches)
    expected = {f"p{p}": 0 for p in range(PLAYERS)}
    for i in range(PER_BATCH):
        expected[f"p{i % PLAYERS}"] += (1 + (i % 7)) * BATCHES
    assert pending_lag()[0] > 0
    assert _healthz_projector().startswith("down: no projector")

    first = projector_process()
    until(lambda: _healthz_projector() == "ok", "the projector owning its lanes")
    until(_projector_writing, "the projector inside a batch", every=0.02)
    first.send_signal(signal.SIGKILL)  # inside a transaction that has claimed pending rows
    first.wait(timeout=10)
    until(lambda: not _projector_writing(), "Postgres noticing the dead projector")
    assert pending_lag()[0] > 0  # the batch it was in rolled back: its rows wait again
    until(lambda: _healthz_projector().startswith("down"), "the ownership locks gone")

    projector_process()
    until(lambda: pending_lag()[0] == 0, "the second projector applying everything", timeout=120)
    outbox_drain(grace_seconds=0)  # the periodic heal, for a batch killed between commit and Redis

    totals = dict(
        PlayerValue.objects.filter(board__slug="points", window="all").values_list("player__external_id", "value")
    )
    assert totals == expected
    on_board = {
        e.external_id: e.value
        for e in selectors.board_range(cached_board("chess", board_slug="points"), window="all", start=0, stop=100)
    }
    assert on_board == expected
