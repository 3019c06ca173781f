"""Score histograms: exact counts in disjoint, ordered buckets of displayed values, built from
the sorted sets at quantile boundaries, refreshed only when a board window changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client, override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boards import histogram, index, tasks
from boards.histogram import Bucket, Histogram, approximate_rank, histogram_build, histograms_refresh
from boards.rolling import rolling_windows_refresh
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board
from scores.selectors import cached_board
from tests.boards.conftest import URL, submit
from tests.boards.test_redis_down import ThrowawayRedis
from tests.conftest import SignedClient, game_with_boards, reset_results
from tests.factories import BoardFactory
from tests.reference import RefBoard, Reference
from tests.scores.test_ingest_api import assert_error

BOARDS = {
    "high": (RefBoard("high", "desc", "best", 0, 40), "unique"),
    "low": (RefBoard("low", "asc", "best", 18, 60), "shared"),
    "sum": (RefBoard("sum", "desc", "total", 0, 9), "shared"),
}
AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _check_shape(h: Histogram) -> None:
    assert sum(b.count for b in h.buckets) == h.total
    assert all(b.min <= b.max and b.count > 0 for b in h.buckets)
    assert all(a.max < b.min for a, b in zip(h.buckets, h.buckets[1:], strict=False))  # ordered, disjoint


@pytest.fixture
def world(transactional_db):
    return game_with_boards("hist", BOARDS.values())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    results=st.lists(
        st.tuples(st.integers(0, 30), st.sampled_from(list(BOARDS)), st.integers(0, 40), st.integers(0, 3)),
        min_size=1,
        max_size=40,
    ),
    buckets=st.integers(1, 8),
    probes=st.lists(st.integers(-5, 70), max_size=5),
)
def test_histogram_counts_buckets_and_approximate_rank_against_the_reference(world, results, buckets, probes) -> None:
    _game, server = world
    reset_results()
    ref = Reference({slug: b for slug, (b, _) in BOARDS.items()}, "UTC", [])
    matches = []
    for i, (player, slug, score, seconds) in enumerate(results):
        b = BOARDS[slug][0]
        matches.append(
            {
                "match_id": f"m{i}",
                "ended_at": (AT + timedelta(seconds=seconds)).isoformat(),
                "results": [
                    {
                        "player": f"p{player}",
                        "board": slug,
                        "score": b.min_score + score % (b.max_score - b.min_score + 1),
                    }
                ],
            }
        )
        assert ref.submit(matches[-1]) == 201
    assert server.post("/api/v1/games/hist/matches/batch", {"matches": matches}).status_code == 200

    for slug, (b, display) in BOARDS.items():
        h = histogram_build(cached_board("hist", board_slug=slug), "all", buckets=buckets, store=False)
        ranks = ref.ranks(slug, "all", display == "shared")
        values = [v for _, _, v in ranks]
        _check_shape(h)
        assert h.total == len(ranks)
        assert len(h.buckets) <= buckets
        assert h.order == ("asc" if b.order == "asc" else "desc")
        for bucket in h.buckets:
            assert bucket.count == sum(1 for v in values if bucket.min <= v <= bucket.max)
        if values:
            assert h.buckets[0].min == min(values) and h.buckets[-1].max == max(values)

        def holding(value: int, h: Histogram = h) -> int:
            return next((bk.count for bk in h.buckets if bk.min <= value <= bk.max), 0)

        for rank, _player, value in ranks:
            assert abs(approximate_rank(h, value) - rank) <= holding(value)
        for value in probes:  # values nobody holds: the rank they would have
            better = sum(1 for v in values if (v > value if b.order == "desc" else v < value))
            assert abs(approximate_rank(h, value) - (better + 1)) <= holding(value)


def test_asc_buckets_run_from_the_lowest_value_and_decode_right(ranked) -> None:
    golf = cached_board("chess", board_slug="golf")  # asc, 18..200: p1 70, p2 72
    submit(ranked, "g3", [{"player": "p3", "board": "golf", "score": 90}])
    h = histogram_build(golf, "all", buckets=3)
    assert h.buckets == (Bucket(70, 70, 1), Bucket(71, 72, 1), Bucket(73, 90, 1))
    assert h.order == "asc"
    assert approximate_rank(h, 70) == 1 and approximate_rank(h, 90) == 3 and approximate_rank(h, 100) == 4
    assert approximate_rank(h, 10) == 1
    rating = histogram_build(cached_board("chess", board_slug="rating"), "all", buckets=3)  # 500, 400, 400, 300, 100
    assert rating.buckets == (Bucket(100, 299, 1), Bucket(300, 399, 1), Bucket(400, 500, 3))
    assert approximate_rank(rating, 500) == 1


def test_quantile_slices_sharing_a_value_merge(server: SignedClient, game) -> None:
    # 2000 players: 1500 share the value 7, the rest hold distinct values
    results = [{"player": f"p{i:04d}", "board": "rating", "score": 7 if i < 1500 else i} for i in range(2000)]
    for n in range(0, 2000, 100):
        submit(server, f"big{n}", results[n : n + 100])
    h = histogram_build(cached_board("chess", board_slug="rating"), "all")
    _check_shape(h)
    assert h.total == 2000
    # 750 quantile ranks fall on the value 7: one bucket, up to the next boundary (1500, 1502, ...)
    assert h.buckets[0] == Bucket(7, 1499, 1500)
    assert len(h.buckets) == 1 + 250
    assert all(b.count == 2 for b in h.buckets[1:]) and h.buckets[-1] == Bucket(1998, 1999, 2)


def test_a_thousand_buckets_at_most(server: SignedClient, game) -> None:
    results = [{"player": f"p{i:04d}", "board": "rating", "score": i} for i in range(2500)]
    for n in range(0, 2500, 100):
        submit(server, f"big{n}", results[n : n + 100])
    h = histogram_build(cached_board("chess", board_slug="rating"), "all")
    _check_shape(h)
    assert len(h.buckets) == 1000 and h.total == 2500
    assert max(b.count for b in h.buckets) - min(b.count for b in h.buckets) <= 1


def test_endpoint_shape_cache_header_and_on_demand_build(ranked) -> None:
    client = Client()
    response = client.get(URL + "/boards/rating/histogram")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=60"
    body = response.json()
    assert set(body) == {"game", "board", "window", "total", "refreshed_at", "buckets"}
    assert (body["game"], body["board"], body["window"], body["total"]) == ("chess", "rating", "all", 5)
    assert body["refreshed_at"] is not None  # not refreshed yet: computed once, on this read, and stored
    assert all(set(b) == {"min", "max", "count"} for b in body["buckets"])
    assert sum(b["count"] for b in body["buckets"]) == 5
    rating = Board.objects.get(slug="rating")
    assert get_redis().hexists(keys.histogram_key(rating.id, "all"), "body")
    assert client.get(URL + "/boards/rating/histogram?window=all").json() == body  # served as stored

    empty = client.get(URL + "/boards/rating/histogram?window=daily:2026-11-01").json()
    assert (empty["window"], empty["total"], empty["buckets"], empty["refreshed_at"]) == (
        "daily:2026-11-01",
        0,
        [],
        None,
    )
    assert not get_redis().exists(keys.histogram_key(rating.id, "daily:2026-11-01"))
    daily = client.get(URL + "/boards/rating/histogram?window=daily").json()
    assert daily["window"] == f"daily:{datetime.now(UTC).date()}"


def test_endpoint_404s(ranked) -> None:
    client = Client()
    assert_error(client.get("/api/v1/games/nope/boards/rating/histogram"), 404, "unknown_game")
    assert_error(client.get(URL + "/boards/nope/histogram"), 404, "unknown_board")
    assert_error(client.get(URL + "/boards/rating/histogram?window=yearly"), 404, "unknown_window")
    assert_error(client.get(URL + "/boards/rating/histogram?window=last7d"), 404, "unknown_window")
    assert_error(client.get(URL + "/boards/rating/histogram?window=daily:2026-02-30"), 404, "unknown_window")


def test_refresh_skips_unchanged_windows_and_rebuilds_changed_ones(ranked, game) -> None:
    now = datetime(2026, 11, 28, 13, 0, tzinfo=UTC)
    # windows kept: all, daily, weekly, monthly, season on three boards (season s1 is running)
    first = histograms_refresh(now)
    assert (first.windows, first.built, first.skipped) == (15, 15, 0)
    second = histograms_refresh(now + timedelta(seconds=1))
    assert (second.built, second.skipped) == (0, 15)

    submit(ranked, "late", [{"player": "p9", "board": "rating", "score": 50}], at="2026-11-28T12:30:00Z")
    third = histograms_refresh(now + timedelta(seconds=2))
    assert (third.built, third.skipped) == (5, 10)  # rating's five windows
    body = Client().get(URL + "/boards/rating/histogram?window=daily:2026-11-28").json()
    assert body["total"] == 6 and body["refreshed_at"] == "2026-11-28T13:00:02Z"

    # a change in the middle of a board leaves ZCARD and both ends as they were: MAX_AGE catches it
    submit(ranked, "mid", [{"player": "p4", "board": "rating", "score": 350}], at="2026-11-28T12:40:00Z")
    assert histograms_refresh(now + timedelta(seconds=3)).built == 0
    later = histograms_refresh(now + timedelta(seconds=3 + histogram.MAX_AGE))
    assert later.built == 15
    rating = Board.objects.get(slug="rating")
    assert 0 < get_redis().ttl(keys.histogram_key(rating.id, "all")) <= histogram.HISTOGRAM_TTL


def test_refresh_covers_rolling_windows(server: SignedClient, game) -> None:
    BoardFactory(game=game, slug="weekly-ish", windows=["daily", "last7d"])
    submit(server, "m1", [{"player": "a", "board": "weekly-ish", "score": 3}], at="2026-11-27T10:00:00Z")
    now = datetime(2026, 11, 28, 13, 0, tzinfo=UTC)
    rolling_windows_refresh(now)
    histograms_refresh(now)
    board = Board.objects.get(slug="weekly-ish")
    r = get_redis()
    assert r.hexists(keys.histogram_key(board.id, "last7d"), "body")
    assert r.hexists(keys.histogram_key(board.id, "daily:2026-11-28"), "body")  # empty, but current
    body = Client().get(URL + "/boards/weekly-ish/histogram?window=last7d").json()
    assert (body["total"], body["buckets"]) == (1, [{"min": 3, "max": 3, "count": 1}])
    empty = Client().get(URL + "/boards/weekly-ish/histogram?window=daily:2026-11-28").json()
    assert (empty["total"], empty["buckets"], empty["refreshed_at"]) == (0, [], "2026-11-28T13:00:00Z")


def test_rebuilds_leave_histograms_alone(ranked, game) -> None:
    from boards.services import boards_rebuild

    histograms_refresh(datetime(2026, 11, 28, 13, 0, tzinfo=UTC))
    rating = Board.objects.get(slug="rating")
    boards_rebuild()
    assert get_redis().hexists(keys.histogram_key(rating.id, "all"), "body")


def test_degraded_histogram_is_empty_not_an_error(ranked, tmp_path) -> None:
    dead = ThrowawayRedis(tmp_path)
    caches = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": dead.url,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.2, "SOCKET_TIMEOUT": 0.2, "IGNORE_EXCEPTIONS": True},
        }
    }
    with override_settings(CACHES=caches):
        response = Client().get(URL + "/boards/rating/histogram")
    assert response.status_code == 200 and response["Cache-Control"] == "public, max-age=1"
    body = response.json()
    assert (body["total"], body["buckets"], body["refreshed_at"], body["degraded"]) == (0, [], None, True)


def test_command_task_and_schedule(ranked) -> None:
    out = StringIO()
    call_command("refresh_histograms", "--now", "2026-11-28T13:00:00Z", stdout=out)
    assert "15 board windows, 15 rebuilt, 0 unchanged" in out.getvalue()
    commanded = datetime(2026, 11, 28, 13, tzinfo=UTC).timestamp()
    # the task refreshes at its own moment: every all-time histogram, built above for 13:00 on
    # the 28th, is stale then and rebuilt (its other windows are the current ones, new)
    boards = list(Board.objects.all())
    assert tasks.refresh_histograms() >= len(boards)
    for board in boards:
        built_at = index.index().hget(keys.histogram_key(board.id, "all"), "built_at")
        assert float(built_at) > commanded, board.slug
    schedule = django_settings.CELERY_BEAT_SCHEDULE["boards-refresh-histograms"]
    assert (schedule["task"], schedule["schedule"]) == ("boards.tasks.refresh_histograms", 60.0)


def test_approximate_rank_of_an_empty_histogram_is_first() -> None:
    assert approximate_rank(Histogram("all", "desc", 0, None, ()), 5) == 1
