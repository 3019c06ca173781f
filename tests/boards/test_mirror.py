"""The post-commit mirror: absolute values with ZADD GT, never lowered, never doubled."""

from __future__ import annotations

import pytest

from boards import index, services
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board, BoardOutbox, PlayerValue
from tests.boards.conftest import member_key
from tests.conftest import SignedClient

pytestmark = pytest.mark.usefixtures("topology")

URL = "/api/v1/games/chess/matches"


def _post(server: SignedClient, match_id: str, board: str, score: int, at: str = "2026-11-28T12:00:00Z") -> None:
    body = {"match_id": match_id, "ended_at": at, "results": [{"player": "p1", "board": board, "score": score}]}
    assert server.post(URL, body).status_code == 201


def test_the_drain_deletes_rows_the_fast_path_applied_without_replaying_them(server: SignedClient) -> None:
    _post(server, "m1", "rating", 10)
    _post(server, "m2", "rating", 20)
    assert BoardOutbox.objects.count() == 2
    assert services.outbox_drain(grace_seconds=0) == 0
    assert not BoardOutbox.objects.exists()
    assert get_redis().scard(keys.OUTBOX_APPLIED) == 0


def test_a_stale_replay_cannot_lower_a_score(server: SignedClient, game) -> None:
    board = Board.objects.get(game=game, slug="rating")
    _post(server, "m1", "rating", 10)
    old = PlayerValue.objects.get(board=board, window="all")
    _post(server, "m2", "rating", 20)
    # an out-of-order delivery of the older absolute value
    services.values_write([(board.id, "all", old.player_id, old.encoded)])
    new = PlayerValue.objects.get(board=board, window="all")
    assert new.value == 20
    assert index.index().zscore(member_key(board.id, "all", new.player_id), str(new.player_id)) == new.encoded


def test_totals_are_absolute_so_a_replay_does_not_double(server: SignedClient, game) -> None:
    board = Board.objects.get(game=game, slug="points")
    _post(server, "m1", "points", 5)
    _post(server, "m2", "points", 7)
    value = PlayerValue.objects.get(board=board, window="all")
    services.values_write([(board.id, "all", value.player_id, value.encoded)] * 3)
    assert value.value == 12
    assert index.index().zscore(member_key(board.id, "all", value.player_id), str(value.player_id)) == value.encoded


def test_a_later_equal_result_does_not_move_a_player_down(server: SignedClient, game) -> None:
    board = Board.objects.get(game=game, slug="rating")
    _post(server, "m1", "rating", 10, "2026-11-28T12:00:00Z")
    first = PlayerValue.objects.get(board=board, window="all")
    _post(server, "m2", "rating", 10, "2026-11-28T13:00:00Z")
    assert PlayerValue.objects.get(board=board, window="all").reached_at == first.reached_at
    _post(server, "m3", "rating", 10, "2026-11-28T11:00:00Z")  # an earlier equal result arriving late does
    assert PlayerValue.objects.get(board=board, window="all").reached_at.hour == 11


def test_total_boards_show_the_metadata_of_the_latest_result(server: SignedClient, game) -> None:
    """Zero-score results do not move a total's reached_at, but they are still the latest."""
    board = Board.objects.get(game=game, slug="points")

    def post(match_id: str, score: int, at: str, replay: str) -> None:
        body = {
            "match_id": match_id,
            "ended_at": at,
            "results": [{"player": "p1", "board": "points", "score": score, "metadata": {"replay": replay}}],
        }
        assert server.post(URL, body).status_code == 201

    post("a", 5, "2026-11-28T12:00:10Z", "a")
    post("b", 0, "2026-11-28T12:00:20Z", "b")
    post("c", 3, "2026-11-28T12:00:15Z", "c")  # arrives late
    value = PlayerValue.objects.get(board=board, window="all")
    assert value.value == 8 and value.metadata == {"replay": "b"}
    assert value.reached_at.second == 15  # the total became 8 when c counted
