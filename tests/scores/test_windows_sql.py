"""The projector derives a result's windows in SQL (scores/projection/values.py); the request
side and moderation derive them in Python (result_windows, scores.windows.windows_for). For any
instant, time zone, season layout and region, both name exactly the same windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scores.models import Game, PlayerRegion, PlayerValue, Region
from scores.projection import pending_apply
from scores.selectors import config_cache_clear, game_config
from scores.windows import result_windows
from tests.conftest import SignedClient, reset_results
from tests.factories import BoardFactory, GameFactory, SeasonFactory, server_key

pytestmark = pytest.mark.without_projector("the test applies batches by hand and reads the windows they wrote")

ZONES = ["UTC", "Europe/Paris", "America/Los_Angeles", "Asia/Kathmandu", "Pacific/Chatham", "Australia/Lord_Howe"]
# around year, month, ISO week and DST boundaries, all in the past (a result may not end in the
# future): 2025-12-31 is in ISO week 2026-W01, 2021-01-03 in 2020-W53
BASES = [datetime(2025, 12, 31, 23, 0, tzinfo=UTC), datetime(2021, 1, 3, 12, 0, tzinfo=UTC),
         datetime(2025, 3, 30, 0, 30, tzinfo=UTC), datetime(2025, 10, 26, 1, 0, tzinfo=UTC),
         datetime(2026, 1, 31, 22, 0, tzinfo=UTC), datetime(2026, 11, 1, 8, 0, tzinfo=UTC)]  # fmt: skip


@pytest.fixture
def zoned(transactional_db):
    game = GameFactory(slug="zoned", reset_timezone="UTC")
    BoardFactory(game=game, slug="b", regions=True, windows=["all", "daily", "weekly", "monthly", "season"])
    Region.objects.create(game=game, slug="far", timezone="Pacific/Chatham")
    # seasons that meet, overlap and leave gaps around the instants above
    SeasonFactory(
        game=game, slug="s1", starts_at=datetime(2026, 10, 1, tzinfo=UTC), ends_at=datetime(2027, 1, 1, tzinfo=UTC)
    )
    SeasonFactory(
        game=game, slug="s2", starts_at=datetime(2027, 1, 1, tzinfo=UTC), ends_at=datetime(2027, 2, 1, tzinfo=UTC)
    )
    SeasonFactory(
        game=game, slug="s3", starts_at=datetime(2026, 12, 31, tzinfo=UTC), ends_at=datetime(2027, 1, 2, tzinfo=UTC)
    )
    key, secret = server_key(game)
    return game, SignedClient(key.key_id, secret)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base=st.sampled_from(BASES),
    minutes=st.integers(min_value=-26 * 60, max_value=26 * 60),
    zone=st.sampled_from(ZONES),
    region=st.booleans(),
)
def test_sql_and_python_name_the_same_windows(zoned, base, minutes, zone, region) -> None:
    game, server = zoned
    reset_results()
    Game.objects.filter(pk=game.pk).update(reset_timezone=zone)
    config_cache_clear()
    ended_at = base + timedelta(minutes=minutes)
    result = {"player": "p", "board": "b", "score": 5, **({"region": "far"} if region else {})}
    response = server.post(
        "/api/v1/games/zoned/matches", {"match_id": "m", "ended_at": ended_at.isoformat(), "results": [result]}
    )
    assert response.status_code == 201, response.content
    pending_apply()
    config = game_config(Game.objects.get(pk=game.pk))
    board = config.boards["b"]
    assert PlayerRegion.objects.exists() == region
    expected = set(result_windows(config, board, ended_at, "far" if region else None))
    assert set(PlayerValue.objects.values_list("window", flat=True)) == expected
