"""Concurrent submissions for one player never lose an update (real Postgres transactions)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from django.db import connection

from rediskit import keys
from rediskit.client import get_redis
from scores import encoding
from scores.models import Board, PlayerValue
from tests.conftest import SignedClient

THREADS = 8
PER_THREAD = 15


def _submit_all(server: SignedClient, bodies: list[dict], batch: bool) -> list[int]:
    def run(chunk: list[dict]) -> list[int]:
        client = SignedClient(server.key_id, server.secret)
        try:
            if batch:
                r = client.post("/api/v1/games/chess/matches/batch", {"matches": chunk})
                return [r.status_code] * len(chunk)
            return [client.post("/api/v1/games/chess/matches", b).status_code for b in chunk]
        finally:
            connection.close()

    chunks = [bodies[i::THREADS] for i in range(THREADS)]
    with ThreadPoolExecutor(THREADS) as pool:
        return [s for statuses in pool.map(run, chunks) for s in statuses]


def _bodies(board: str, scores: list[int]) -> list[dict]:
    return [
        {
            "match_id": f"c-{i}",
            "ended_at": f"2026-11-28T10:{i // 60:02d}:{i % 60:02d}Z",
            "results": [
                {"player": "hot", "board": board, "score": s},
                {"player": f"other-{i % 3}", "board": board, "score": s},
            ],
        }
        for i, s in enumerate(scores)
    ]


def test_concurrent_totals_for_one_player_all_count(server: SignedClient, game) -> None:
    scores = [random.randint(0, 1000) for _ in range(THREADS * PER_THREAD)]
    statuses = _submit_all(server, _bodies("points", scores), batch=False)
    assert statuses == [201] * len(scores)
    board = Board.objects.get(game=game, slug="points")
    for window in ("all", "daily:2026-11-28", "weekly:2026-W48", "monthly:2026-11", "season:s1"):
        value = PlayerValue.objects.get(board=board, window=window, player__external_id="hot")
        assert value.value == sum(scores)
        assert value.encoded == encoding.encode(board, sum(scores), value.reached_at)
        member = str(value.player_id)
        assert int(get_redis().zscore(keys.board_key(board.id, window), member)) == value.encoded


def test_concurrent_best_results_keep_the_best(server: SignedClient, game) -> None:
    scores = [random.randint(0, 10_000_000) for _ in range(THREADS * PER_THREAD)]
    statuses = _submit_all(server, _bodies("rating", scores), batch=True)
    assert statuses == [200] * len(scores)
    board = Board.objects.get(game=game, slug="rating")
    value = PlayerValue.objects.get(board=board, window="all", player__external_id="hot")
    assert value.value == max(scores)
    assert int(get_redis().zscore(keys.board_key(board.id, "all"), str(value.player_id))) == value.encoded
