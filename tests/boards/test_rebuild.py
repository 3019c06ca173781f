"""rebuild_boards: fresh keys from Postgres, swapped in whole."""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections
from django.test import Client

from boards import index, services
from boards.management.commands import rebuild_boards
from rediskit import keys
from scores.models import Board, PlayerValue
from tests.boards.conftest import URL, member_key, set_keys
from tests.conftest import SignedClient
from tests.projector import projected

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


@pytest.mark.usefixtures("real_projector")
def test_readers_during_a_rebuild_see_the_old_board_or_the_new_never_a_half_built_one(
    server: SignedClient, game, monkeypatch
) -> None:
    """docs/api.md §11 (docs/architecture.md "Rebuild"): readers see the old board or the new
    one, never a half-built one. The index lost a third of every window's members; the real
    command rebuilds the board from Postgres, and at every step of its stream (each chunk handed
    to Redis, where its progress bar counts) a reader on another thread reads each window's top
    over the API. Chunks of 500 rows instead of 20,000 give the stream a step every few hundred
    members; the pipelines run behind by at most three chunks, so rows written into the live
    keys would show by the later steps."""
    matches = [  # 1,000 players, on the path users submit
        {
            "match_id": f"big-{m}",
            "ended_at": "2026-11-28T12:00:00Z",
            "results": [{"player": f"b{m}-{i}", "board": "rating", "score": 10 * i + m} for i in range(100)],
        }
        for m in range(10)
    ]
    assert server.post(f"{URL}/matches/batch", {"matches": matches}).status_code == 200
    projected("the 1,000 players on the boards")
    rating = Board.objects.get(game=game, slug="rating")
    windows = sorted(set(PlayerValue.objects.filter(board=rating).values_list("window", flat=True)))
    r = index.index()
    for window in windows:
        for key in set_keys(rating.id, window):
            members = r.zrange(key, 0, -1)
            if members[::3]:
                r.zrem(key, *members[::3])
    reads = itertools.count()  # a page per read: no read is answered from an earlier one's cache

    def totals() -> dict[str, int]:
        found = {}
        for window in windows:
            offset, limit = divmod(next(reads), 100)
            response = Client().get(
                f"{URL}/boards/rating/top", {"window": window, "offset": offset, "limit": limit + 1}
            )
            assert response.status_code == 200, response.content
            body = response.json()
            assert "degraded" not in body and len(body["entries"]) == min(body["total"] - offset, limit + 1), body
            found[window] = body["total"]
        return found

    old = totals()
    expected = {w: PlayerValue.objects.filter(board=rating, window=w).count() for w in windows}
    assert all(old[w] < expected[w] for w in windows)  # the damage shows

    seen: list[dict[str, int]] = []
    with ThreadPoolExecutor(1) as reader:

        class Steps:
            """The command's progress bar: at each step, a reader elsewhere reads the board."""

            def __init__(self, **kwargs: object) -> None:
                pass

            def __enter__(self) -> Steps:
                return self

            def __exit__(self, *exc: object) -> None:
                pass

            def update(self, n: int) -> None:
                seen.append(reader.submit(totals).result())

        monkeypatch.setattr(services, "REBUILD_CHUNK", 500)
        monkeypatch.setattr(rebuild_boards, "tqdm", Steps)
        try:
            call_command("rebuild_boards", "--game", "chess", "--board", "rating", stdout=StringIO())
        finally:
            reader.submit(lambda: connection.close()).result()  # the reader thread's own connection

    assert len(seen) >= 10  # every window's chunks, each a step
    for step in seen:
        assert all(step[w] in (old[w], expected[w]) for w in windows), (step, old, expected)
    assert totals() == expected
