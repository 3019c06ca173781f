"""rebuild_boards: fresh keys from Postgres, swapped in whole."""

from __future__ import annotations

import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from boards import index, services
from rediskit import keys
from scores.models import Board, PlayerValue
from tests.boards.conftest import member_key, set_keys
from tests.conftest import SignedClient

pytestmark = pytest.mark.usefixtures("topology")


def _submit(server: SignedClient, n: int) -> None:
    matches = [
        {
            "match_id": f"r-{i}",
            "ended_at": f"2026-11-{20 + i % 5}T12:00:00Z",
            "results": [
                {"player": f"p{i}", "board": "rating", "score": i * 7},
                {"player": f"p{i}", "board": "points", "score": i % 11},
            ],
        }
        for i in range(n)
    ]
    assert server.post("/api/v1/games/chess/matches/batch", {"matches": matches}).status_code == 200


def _snapshot() -> dict[str, dict[bytes, float]]:
    r = index.index()
    boards = [k for k in r.scan_iter("lb:*") if keys.parse_board_key(k.decode())]
    return {k.decode(): dict(r.zrange(k, 0, -1, withscores=True)) for k in boards}


def test_rebuild_reproduces_the_live_index_and_drops_what_postgres_no_longer_has(server: SignedClient, game) -> None:
    _submit(server, 40)
    live = _snapshot()
    r = index.index()
    rating = Board.objects.get(game=game, slug="rating")
    # damage the index: a stray member, a lost member, a window Postgres never had
    r.zadd(member_key(rating.id, "all", 999999), {"999999": 1.0})
    day = next(k for k in set_keys(rating.id, "daily:2026-11-20") if r.zcard(k))
    r.zrem(day, r.zrange(day, 0, 0)[0])
    r.zadd(member_key(rating.id, "daily:2020-01-01", 1), {"1": 1.0})
    out = StringIO()
    call_command("rebuild_boards", stdout=out)
    assert _snapshot() == live
    assert "entries" in out.getvalue()
    assert r.exists(keys.BUILT_MARKER)
    assert not list(r.scan_iter("lbb:*"))


def test_rebuild_of_one_board_leaves_the_others_alone(server: SignedClient, game) -> None:
    _submit(server, 10)
    r = index.index()
    points = Board.objects.get(game=game, slug="points")
    r.zadd(member_key(points.id, "all", 424242), {"424242": 5.0})
    call_command("rebuild_boards", "--game", "chess", "--board", "rating", stdout=StringIO())
    assert r.zscore(member_key(points.id, "all", 424242), "424242") == 5.0


def test_rebuild_replays_values_committed_while_it_streamed(server: SignedClient, game) -> None:
    _submit(server, 5)
    rating = Board.objects.get(game=game, slug="rating")
    late: list[bool] = []

    def late_submission() -> None:
        try:  # its own connection: committed and applied while the rebuild's stream is still open
            server.post(
                "/api/v1/games/chess/matches",
                {
                    "match_id": "late",
                    "ended_at": "2026-11-28T00:00:00Z",
                    "results": [{"player": "late", "board": "rating", "score": 999}],
                },
            )
        finally:
            connections.close_all()

    def progress(n: int) -> None:
        # a submission lands, and the projector mirrors it to the live keys, after the rebuild
        # has read its rows, before the swap: the swap drops it, the catch-up must put it back
        if not late:
            late.append(True)
            submitter = threading.Thread(target=late_submission)
            submitter.start()
            submitter.join()

    services.boards_rebuild(boards=[rating], progress=progress)
    value = PlayerValue.objects.get(board=rating, window="all", player__external_id="late")
    assert index.index().zscore(member_key(rating.id, "all", value.player_id), str(value.player_id)) == value.encoded


def test_rebuild_board_without_game_is_an_error(transactional_db) -> None:
    with pytest.raises(CommandError):
        call_command("rebuild_boards", "--board", "rating")
