"""Regional boards: one board per region, rolling over at the region's own midnight; results
applied by the real projector process (tests/projector.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from scores.models import Match, PlayerRegion, PlayerValue
from scores.selectors import config_cache_clear
from seasons import services
from seasons.models import WindowFreeze
from tests.conftest import SignedClient
from tests.factories import server_key
from tests.projector import projected
from tests.scores.test_ingest_api import assert_error

pytestmark = pytest.mark.usefixtures("real_projector")

CONFIG = """
[game]
slug = "world"
name = "World"
reset_timezone = "UTC"
retention_periods = 100000

[[regions]]
slug = "eu"
timezone = "Europe/Paris"

[[regions]]
slug = "us"
timezone = "America/New_York"

[[boards]]
slug = "rating"
name = "Rating"
max_score = 1000
windows = ["all", "daily", "season"]
regions = true

[[boards]]
slug = "plain"
name = "Plain"
max_score = 1000
windows = ["all", "daily"]

[[seasons]]
slug = "s1"
name = "Season 1"
starts_at = "2026-11-01T00:00:00Z"
ends_at = "2027-02-01T00:00:00Z"
"""
URL = "/api/v1/games/world"
LATE_EVENING = "2026-11-27T23:30:00Z"  # already the 28th in Paris, still the 27th in New York


@pytest.fixture
def world(transactional_db, tmp_path: Path) -> SignedClient:
    path = tmp_path / "world.toml"
    path.write_text(CONFIG)
    call_command("apply_game_config", str(path), stdout=None)
    config_cache_clear()
    from scores.models import Game

    key, secret = server_key(Game.objects.get(slug="world"))
    return SignedClient(key.key_id, secret)


def post(server: SignedClient, match_id: str, results: list[dict], at: str = LATE_EVENING):
    """Submits one match; returns its answer once what it stored is on the boards."""
    response = server.post(URL + "/matches", {"match_id": match_id, "ended_at": at, "results": results})
    projected(f"match {match_id} on the boards")
    return response


def top(board: str = "rating", **params) -> dict:
    response = Client().get(URL + f"/boards/{board}/top", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_a_result_counts_on_the_global_board_and_its_regions_board(world) -> None:
    assert post(world, "m1", [{"player": "ana", "board": "rating", "score": 10, "region": "eu"}]).status_code == 201
    assert post(world, "m2", [{"player": "bob", "board": "rating", "score": 20, "region": "us"}]).status_code == 201
    assert [e["player"] for e in top()["entries"]] == ["bob", "ana"]
    eu = top(region="eu", window="daily:2026-11-28")
    assert eu["window"] == "eu/daily:2026-11-28" and [e["player"] for e in eu["entries"]] == ["ana"]
    us = top(region="us", window="daily:2026-11-27")
    assert [e["player"] for e in us["entries"]] == ["bob"]
    assert top(window="daily:2026-11-27")["total"] == 2  # the global board rolls over in UTC
    standing = world.get(URL + "/boards/rating/players/ana?region=eu&window=all").json()
    assert standing["rank"] == 1 and standing["total"] == 1 and standing["window"] == "eu/all"


def test_a_players_region_is_fixed_for_the_season(world) -> None:
    assert post(world, "m1", [{"player": "ana", "board": "rating", "score": 10, "region": "eu"}]).status_code == 201
    moved = post(world, "m2", [{"player": "ana", "board": "rating", "score": 99, "region": "us"}])
    assert_error(moved, 400, "region_changed")
    assert not Match.objects.filter(match_id="m2").exists()
    # a later result without a region counts in the region the player belongs to
    assert post(world, "m3", [{"player": "ana", "board": "rating", "score": 50}]).status_code == 201
    assert top(region="eu")["entries"][0]["score"] == 50
    assert PlayerRegion.objects.count() == 1


def test_region_errors(world) -> None:
    assert_error(
        post(world, "m", [{"player": "a", "board": "rating", "score": 1, "region": "mars"}]), 400, "unknown_region"
    )
    assert_error(Client().get(URL + "/boards/rating/top?region=mars"), 404, "unknown_region")
    assert_error(Client().get(URL + "/boards/plain/top?region=eu"), 404, "unknown_region")


def test_a_batch_refuses_only_the_match_that_moves_a_player(world) -> None:
    batch = {
        "matches": [
            {
                "match_id": "a",
                "ended_at": LATE_EVENING,
                "results": [{"player": "ana", "board": "rating", "score": 1, "region": "eu"}],
            },
            {
                "match_id": "b",
                "ended_at": LATE_EVENING,
                "results": [{"player": "ana", "board": "rating", "score": 2, "region": "us"}],
            },
            {
                "match_id": "c",
                "ended_at": LATE_EVENING,
                "results": [{"player": "bob", "board": "plain", "score": 3, "region": "us"}],
            },
        ]
    }
    response = world.post(URL + "/matches/batch", batch)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["accepted", "rejected", "accepted"]
    assert results[1]["error"]["code"] == "region_changed"
    projected()
    assert [(e["player"], e["score"]) for e in top(region="eu")["entries"]] == [("ana", 1)]
    assert [(e["player"], e["score"]) for e in top("plain")["entries"]] == [("bob", 3)]


def test_regional_windows_close_at_the_regions_midnight(world) -> None:
    assert post(world, "m1", [{"player": "ana", "board": "rating", "score": 10, "region": "eu"}]).status_code == 201
    paris_midnight_plus_grace = datetime(2026, 11, 28, 23, 5, tzinfo=UTC)  # 00:05 on the 29th in Paris
    report = services.windows_close(now=paris_midnight_plus_grace)
    assert "world/rating eu/daily:2026-11-28" in report.frozen
    assert "world/rating daily:2026-11-28" not in report.frozen  # UTC's 28th is still open
    assert not WindowFreeze.objects.filter(window="us/daily:2026-11-28").exists()
    standings = Client().get(URL + "/boards/rating/standings/daily:2026-11-28?region=eu")
    assert standings.status_code == 200, standings.content
    assert standings.json()["entries"][0]["player"] == "ana"
    assert standings.json()["window"] == "eu/daily:2026-11-28"
    assert_error(Client().get(URL + "/boards/rating/standings/daily:2026-11-28?region=mars"), 404, "unknown_region")
    assert PlayerValue.objects.filter(window="eu/daily:2026-11-28").count() == 1
