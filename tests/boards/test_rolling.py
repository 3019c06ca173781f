"""Rolling windows (last7d, last30d): built on a schedule from the daily windows, read through
the ordinary endpoints, equal to a plain-Python reference fed only the results of those days."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boards import index, tasks
from boards.api import TopApi
from boards.rolling import rolling_days, rolling_windows_refresh
from scores.models import Board
from scores.selectors import window_expiry
from tests.boards.conftest import member_key, set_keys
from tests.boards.test_redis_down import ThrowawayRedis
from tests.conftest import SignedClient, game_with_boards, reset_results
from tests.factories import BoardFactory
from tests.properties import examples
from tests.reference import RefBoard, Reference

pytestmark = pytest.mark.usefixtures("topology")  # one Redis, and the cluster with sharded boards

TZ = "Pacific/Auckland"  # UTC+13 in November: a local day is not the UTC day
ZONE = ZoneInfo(TZ)
ROLLING = ["all", "daily", "last7d", "last30d"]
BOARDS = {
    "high": (RefBoard("high", "desc", "best", 0, 5), "unique"),
    "low": (RefBoard("low", "asc", "best", 10, 15), "shared"),
    "sum": (RefBoard("sum", "desc", "total", 0, 3), "shared"),
}
FIRST_DAY = date(2026, 11, 10)
TODAY = FIRST_DAY + timedelta(days=9)  # ten days of results, the last one today
NOW = datetime.combine(TODAY, time(23, 0), tzinfo=ZONE)
# local times of day, with sub-second parts and both ends of the day: many ties
CLOCK = [time(0, 0), time(0, 0, 0, 600_000), time(12, 0), time(23, 59, 59), time(23, 59, 59, 500_000)]
PLAYERS = ["a", "b", "B", "a1", "_", "Z9"]

match = st.fixed_dictionaries(
    {
        "day": st.integers(0, 9),
        "clock": st.sampled_from(CLOCK),
        "results": st.lists(
            st.tuples(st.sampled_from(PLAYERS), st.sampled_from(list(BOARDS)), st.integers(0, 5)),
            min_size=1,
            max_size=4,
        ),
    }
)


def _ended_at(day: int, clock: time) -> datetime:
    return datetime.combine(FIRST_DAY + timedelta(days=day), clock, tzinfo=ZONE)


def _body(i: int, m: dict) -> dict:
    return {
        "match_id": f"m{i}",
        "ended_at": _ended_at(m["day"], m["clock"]).isoformat(),
        "results": [
            {
                "player": p,
                "board": b,
                "score": min(s, BOARDS[b][0].max_score - BOARDS[b][0].min_score) + BOARDS[b][0].min_score,
            }
            for p, b, s in m["results"]
        ],
    }


def _top(board: str, window: str, game: str = "roll") -> dict:
    response = Client().get(f"/api/v1/games/{game}/boards/{board}/top", {"window": window, "limit": 100})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def world(request, transactional_db):
    # retention_periods=1: closed daily windows leave Redis at once (these days are long
    # past), so rolling best windows must read them from Postgres
    retention = getattr(request, "param", 100_000)
    return game_with_boards("roll", BOARDS.values(), windows=ROLLING, reset_timezone=TZ, retention_periods=retention)


@pytest.mark.parametrize("world", [100_000, 1], ids=["daily-sets-in-redis", "daily-sets-expired"], indirect=True)
@settings(
    max_examples=examples(loop=10, deep=25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(matches=st.lists(match, min_size=1, max_size=12))
def test_rolling_windows_match_the_reference_over_those_days(world, matches) -> None:
    _game, server = world
    reset_results()
    bodies = [_body(i, m) for i, m in enumerate(matches)]
    response = server.post("/api/v1/games/roll/matches/batch", {"matches": bodies})
    assert response.status_code == 200 and all(r["status"] == "accepted" for r in response.json()["results"])

    report = rolling_windows_refresh(NOW)
    assert (report.boards, report.windows) == (3, 6)

    for window, days in (("last7d", 7), ("last30d", 30)):
        first = TODAY - timedelta(days=days - 1)
        # a reference fed only the results of those local days: its "all" is the rolling window
        ref = Reference({slug: b for slug, (b, _) in BOARDS.items()}, TZ, [])
        for body, m in zip(bodies, matches, strict=True):
            if first <= (FIRST_DAY + timedelta(days=m["day"])) <= TODAY:
                assert ref.submit(body) == 201
        for slug, (_b, display) in BOARDS.items():
            got = _top(slug, window)
            want = ref.ranks(slug, "all", display == "shared")
            assert got["window"] == window
            assert got["total"] == len(want)
            assert [(e["rank"], e["player"], e["score"]) for e in got["entries"]] == want
            assert all(e["metadata"] is None for e in got["entries"])
    assert not list(index.index().scan_iter("lbb:*"))


def test_last_n_days_are_the_local_days_ending_today() -> None:
    assert rolling_days("last7d", date(2026, 11, 29)) == [f"daily:2026-11-{d}" for d in range(29, 22, -1)]
    assert len(rolling_days("last30d", date(2026, 11, 29))) == 30
    assert rolling_days("last30d", date(2026, 11, 29))[-1] == "daily:2026-10-31"


def _submit(
    server: SignedClient, match_id: str, day: date, results: list[tuple[str, str, int]], clock: time = time(12, 0)
) -> None:
    body = {
        "match_id": match_id,
        "ended_at": datetime.combine(day, clock, tzinfo=ZONE).isoformat(),
        "results": [{"player": p, "board": b, "score": s} for p, b, s in results],
    }
    assert server.post("/api/v1/games/roll/matches", body).status_code == 201


def _members(board: str, window: str) -> dict[str, int]:
    return {e["player"]: e["score"] for e in _top(board, window)["entries"]}


def _forget_pages() -> None:
    """/top pages are reused for a second (docs/reads.md): read the refreshed window at once."""
    TopApi._local.clear()
    cache.delete_pattern("top:*")


def test_old_days_drop_out_and_an_empty_window_loses_its_key(world) -> None:
    _game, server = world
    old, mid = TODAY - timedelta(days=7), TODAY - timedelta(days=6)
    _submit(server, "old", old, [("a", "high", 5), ("a", "sum", 3), ("c", "low", 10)])
    _submit(server, "mid", mid, [("a", "high", 2), ("b", "high", 4), ("a", "sum", 1)])
    _submit(server, "today", TODAY, [("a", "sum", 2)])

    rolling_windows_refresh(NOW)
    assert _members("high", "last7d") == {"b": 4, "a": 2}  # a's 5 was eight days ago
    assert _members("sum", "last7d") == {"a": 3}
    assert _members("low", "last7d") == {}
    assert _members("high", "last30d") == {"a": 5, "b": 4}
    assert _members("sum", "last30d") == {"a": 6}
    assert _members("low", "last30d") == {"c": 10}

    _forget_pages()
    rolling_windows_refresh(NOW + timedelta(days=1))  # "mid" is now eight days old too
    assert _members("high", "last7d") == {}
    assert _members("sum", "last7d") == {"a": 2}
    r = index.index()
    board = Board.objects.get(slug="high")
    assert not any(r.exists(k) for k in set_keys(board.id, "last7d"))

    _forget_pages()
    rolling_windows_refresh(NOW + timedelta(days=8))
    assert _members("sum", "last7d") == {}
    assert not any(r.exists(k) for k in set_keys(Board.objects.get(slug="sum").id, "last7d"))
    assert not list(r.scan_iter("lbb:*"))


@pytest.mark.parametrize("world", [1], indirect=True)
def test_days_whose_sorted_set_expired_are_read_from_postgres(world) -> None:
    _game, server = world
    today = datetime.now(ZONE).date()
    _submit(server, "old", today - timedelta(days=4), [("a", "high", 5), ("b", "high", 1)], clock=time(0, 0))
    _submit(server, "prev", today - timedelta(days=1), [("b", "high", 4), ("c", "high", 2)], clock=time(0, 0))
    _submit(server, "now", today, [("c", "high", 3), ("d", "high", 0)], clock=time(0, 0))
    r = index.index()
    high = Board.objects.get(slug="high")
    old_day = [k for k in set_keys(high.id, f"daily:{today - timedelta(days=4)}") if r.exists(k)]
    # the game keeps one period, but a board with last30d keeps its daily sets for 30 days
    assert old_day and all(r.ttl(k) > 20 * 86400 for k in old_day)
    assert {r.expiretime(k) for k in old_day} == {window_expiry(high.id, window=f"daily:{today - timedelta(days=4)}")}
    for k in old_day:
        r.delete(k)  # a day Redis lost anyway: the refresh reads it from Postgres
    assert any(r.exists(k) for k in set_keys(high.id, f"daily:{today - timedelta(days=1)}"))
    rolling_windows_refresh()
    assert _members("high", "last7d") == {"a": 5, "b": 4, "c": 3, "d": 0}
    assert not list(r.scan_iter("lbb:*"))
    assert {r.ttl(k) for k in set_keys(high.id, "last7d") if r.exists(k)} == {-1}


def test_totals_swap_in_whole_and_leave_no_scratch_key_or_expiry(world) -> None:
    _game, server = world
    _submit(server, "m1", TODAY, [("a", "sum", 3), ("b", "sum", 0)])
    _submit(server, "m2", TODAY - timedelta(days=1), [("a", "sum", 1), ("b", "sum", 0)])
    r = index.index()
    board_id = Board.objects.get(slug="sum").id
    r.zadd(member_key(board_id, "last7d", 999999), {"999999": 1.0})  # a stale member the swap must not keep
    rolling_windows_refresh(NOW)
    members = {m.decode() for k in set_keys(board_id, "last7d") for m in r.zrange(k, 0, -1)}
    assert "999999" not in members and len(members) == 2
    assert {r.ttl(k) for k in set_keys(board_id, "last7d") if r.exists(k)} == {-1}
    assert not list(r.scan_iter("lbb:*"))
    assert _members("sum", "last7d") == {"a": 4, "b": 0}


def test_total_reached_at_is_the_latest_day_that_added_something(world) -> None:
    _game, server = world
    # x adds on day -3 and on day -1 (a zero today); y reaches 2 in one go on day -2
    _submit(server, "x1", TODAY - timedelta(days=3), [("x", "sum", 1)])
    _submit(server, "y1", TODAY - timedelta(days=2), [("y", "sum", 2)])
    _submit(server, "x2", TODAY - timedelta(days=1), [("x", "sum", 1)])
    _submit(server, "x3", TODAY, [("x", "sum", 0)])
    rolling_windows_refresh(NOW)
    top = _top("sum", "last7d")["entries"]
    assert [(e["player"], e["score"], e["rank"]) for e in top] == [("y", 2, 1), ("x", 2, 1)]  # y got there first


def test_rolling_reads_through_player_and_friends_endpoints(world) -> None:
    _game, server = world
    _submit(server, "m1", TODAY, [("a", "high", 3), ("b", "high", 5), ("c", "high", 1)])
    _submit(server, "m2", TODAY - timedelta(days=2), [("a", "high", 4)])
    assert server.request("PUT", "/api/v1/games/roll/players/a/friends", {"friends": ["c"]}).status_code == 200
    rolling_windows_refresh(NOW)
    me = server.get("/api/v1/games/roll/boards/high/players/a?window=last7d&around=1").json()
    assert (me["window"], me["rank"], me["score"], me["total"], me["metadata"]) == ("last7d", 2, 4, 3, None)
    assert [e["player"] for e in me["around"]] == ["b", "a", "c"]
    friends = server.get("/api/v1/games/roll/boards/high/players/a/friends?window=last7d").json()
    assert [(e["rank"], e["board_rank"], e["player"], e["score"]) for e in friends["entries"]] == [
        (1, 2, "a", 4),
        (2, 3, "c", 1),
    ]
    nobody = server.get("/api/v1/games/roll/boards/low/players/a?window=last7d").json()
    assert nobody["rank"] is None and nobody["around"] == []


def test_rolling_window_of_a_board_that_does_not_keep_it_is_404(world) -> None:
    game, _server = world
    BoardFactory(game=game, slug="plain", windows=["all", "daily"])
    response = Client().get("/api/v1/games/roll/boards/plain/top?window=last7d")
    assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_window"


def test_degraded_rolling_reads_are_empty_pages_not_errors(world, tmp_path, topology) -> None:
    _game, server = world
    _submit(server, "m1", TODAY, [("a", "high", 3)])
    rolling_windows_refresh(NOW)
    dead = ThrowawayRedis(tmp_path)  # never started: nothing listens on its port
    caches = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": dead.url,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.2, "SOCKET_TIMEOUT": 0.2, "IGNORE_EXCEPTIONS": True},
        }
    }
    TopApi._local.clear()
    with override_settings(CACHES=caches):
        top = Client().get("/api/v1/games/roll/boards/high/top?window=last7d")
        assert top.status_code == 200
        if topology == "cluster":  # REDIS_URL down, but the ranking index is on the cluster: it answers
            assert [(e["player"], e["score"]) for e in top.json()["entries"]] == [("a", 3)]
            assert "degraded" not in top.json()
            return
        assert (top.json()["total"], top.json()["entries"], top.json()["degraded"]) == (0, [], True)
        me = server.get("/api/v1/games/roll/boards/high/players/a?window=last7d")
        assert me.status_code == 200 and me.json()["rank"] is None and me.json()["degraded"] is True
        friends = server.get("/api/v1/games/roll/boards/high/players/a/friends?window=last7d")
        assert friends.status_code == 200 and friends.json()["entries"] == [] and friends.json()["degraded"] is True


def test_command_task_and_schedule(world) -> None:
    _game, server = world
    _submit(server, "m1", TODAY - timedelta(days=6), [("a", "high", 3)])
    out = StringIO()
    call_command("refresh_rolling", "--now", NOW.isoformat(), stdout=out)
    assert "6 rolling windows on 3 boards" in out.getvalue()
    assert _members("high", "last7d") == {"a": 3}
    with pytest.raises(CommandError):
        call_command("refresh_rolling", "--now", "yesterday", stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("refresh_rolling", "--now", "2026-11-19T12:00:00", stdout=StringIO())
    assert tasks.refresh_rolling() == 6  # the present: the result is long gone, nothing breaks
    schedule = django_settings.CELERY_BEAT_SCHEDULE["boards-refresh-rolling"]
    assert (schedule["task"], schedule["schedule"]) == ("boards.tasks.refresh_rolling", 60.0)
