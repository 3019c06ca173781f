"""Property: any sequence of submissions (retries, duplicates, conflicts, out-of-order
ended_at, ties, asc/desc, best/total, batches) leaves Postgres and Redis holding exactly the
values and the order of the plain-Python reference model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boards import selectors
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board, PlayerValue
from scores.selectors import cached_board
from tests.conftest import game_with_boards, reset_results
from tests.factories import SeasonFactory
from tests.properties import examples
from tests.reference import RefBoard, Reference, RefSeason

BOARDS = [
    RefBoard("high", "desc", "best", 0, 3),
    RefBoard("low", "asc", "best", 10, 13),
    RefBoard("sum", "desc", "total", 0, 3),
]
SEASON = RefSeason("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC))
# Instants around a month, season and ISO-week boundary, with sub-second parts: many ties.
MOMENTS = [
    datetime(2026, 10, 31, 23, 59, 58, tzinfo=UTC) + timedelta(milliseconds=ms)
    for ms in (0, 400, 1000, 1999, 2000, 2500, 3000)
] + [datetime(2026, 11, 22, 23, 59, 59, tzinfo=UTC) + timedelta(milliseconds=ms) for ms in (0, 700, 1000, 1500)]
PLAYERS = ["a", "b", "B", "a1", "_", "Z9"]

result = st.fixed_dictionaries(
    {
        "player": st.sampled_from(PLAYERS),
        "board": st.sampled_from([b.slug for b in BOARDS] + ["nope"]),
        "score": st.integers(min_value=-1, max_value=14),
    }
)
match = st.fixed_dictionaries(
    {
        "match_id": st.sampled_from([f"m{i}" for i in range(8)]),
        "ended_at": st.sampled_from(MOMENTS).map(lambda d: d.isoformat()),
        "results": st.lists(result, min_size=1, max_size=4),
    }
)
# An operation: one match, a batch, or a retry of an earlier operation's match.
operation = st.one_of(
    st.tuples(st.just("one"), match),
    st.tuples(st.just("batch"), st.lists(match, min_size=1, max_size=4)),
    st.tuples(st.just("retry"), st.integers(min_value=0, max_value=50)),
)


@pytest.fixture
def world(transactional_db):
    game, server = game_with_boards("prop", [(b, "unique") for b in BOARDS])
    SeasonFactory(game=game, slug=SEASON.slug, starts_at=SEASON.starts_at, ends_at=SEASON.ends_at)
    return game, server


@settings(
    max_examples=examples(loop=30, deep=60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(operation, min_size=1, max_size=10))
def test_service_matches_reference_model(world, ops) -> None:
    game, server = world
    reset_results()
    ref = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])
    sent: list[dict] = []
    url = "/api/v1/games/prop/matches"
    for kind, arg in ops:
        if kind == "retry":
            if not sent:
                continue
            arg = sent[arg % len(sent)]
            kind = "one"
        if kind == "one":
            sent.append(arg)
            expected = ref.submit(arg)
            response = server.post(url, arg)
            assert response.status_code == expected, (arg, response.json())
        else:
            sent.extend(arg)
            expected = [ref.submit(m) for m in arg]
            response = server.post(url + "/batch", {"matches": arg})
            got = [r for r in response.json()["results"]]
            want = [
                ("accepted", False) if s == 201 else ("accepted", True) if s == 200 else ("rejected", False)
                for s in expected
            ]
            assert [(r["status"], r["duplicate"]) for r in got] == want, (arg, got)

    boards = {b.slug: b for b in Board.objects.filter(game=game)}
    stored = {
        (pv.board.slug, pv.window, pv.player.external_id): pv.value
        for pv in PlayerValue.objects.select_related("board", "player")
    }
    assert stored == {k: v.value for k, v in ref.values.items()}

    r = get_redis()
    for board_slug, window in ref.windows_with_values():
        board = boards[board_slug]
        want = ref.order(board_slug, window)
        in_redis = selectors.board_range(
            cached_board("prop", board_slug=board_slug), window=window, start=0, stop=len(want) + 5
        )
        assert [e.external_id for e in in_redis] == want, (board_slug, window)
        assert [e.position for e in in_redis] == list(range(len(want)))
        assert r.zcard(keys.board_key(board.id, window)) == len(want)
        with connection.cursor() as cur:
            cur.execute(
                "SELECT p.external_id FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id "
                'WHERE pv.board_id = %s AND pv."window" = %s ORDER BY pv.encoded DESC, p.external_id COLLATE "C"',
                [board.id, window],
            )
            assert [row[0] for row in cur.fetchall()] == want
    # nothing of a refused match reached Redis
    board_keys = [k for k in r.scan_iter("lb:*") if keys.parse_board_key(k.decode())]
    assert len(board_keys) == len(ref.windows_with_values())


@settings(
    max_examples=examples(loop=20, deep=40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(offsets=st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=12), data=st.data())
def test_any_page_of_a_board_is_a_slice_of_the_full_order(world, offsets, data) -> None:
    """Pages cut through groups of identical encoded scores; every page still agrees."""
    game, server = world
    reset_results()
    results = [{"player": f"p{i:02d}"[::-1], "board": "high", "score": o % 2} for i, o in enumerate(offsets)]
    sent = server.post(
        "/api/v1/games/prop/matches", {"match_id": "m", "ended_at": MOMENTS[0].isoformat(), "results": results}
    )
    assert sent.status_code == 201 and sent.json()["status"] == "accepted", sent.content
    board = cached_board("prop", board_slug="high")
    full = selectors.board_range(board, window="all", start=0, stop=100)
    start = data.draw(st.integers(min_value=0, max_value=len(full)))
    stop = data.draw(st.integers(min_value=start, max_value=len(full) + 2))
    page = selectors.board_range(board, window="all", start=start, stop=stop)
    assert page == full[start : stop + 1]
