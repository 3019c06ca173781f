"""docs/api.md §5.1: the public game description, GET /api/v1/games and /api/v1/games/{game}."""

from __future__ import annotations

from datetime import UTC, datetime

from django.test import Client

from tests.factories import BoardFactory, GameFactory, SeasonFactory


def test_games_lists_every_game_without_credentials(game) -> None:
    GameFactory(slug="golf-tour", name="Golf Tour")
    response = Client().get("/api/v1/games")
    assert response.status_code == 200
    assert response.json() == {
        "games": [{"slug": "chess", "name": "Chess"}, {"slug": "golf-tour", "name": "Golf Tour"}]
    }
    assert response["Cache-Control"] == "public, max-age=60"


def test_a_game_describes_its_boards_seasons_and_regions(game) -> None:
    from scores.models import Region

    Region.objects.create(game=game, slug="eu", timezone="Europe/Paris")
    game.seasons.filter(slug="s1").update(ends_at=datetime(2027, 2, 1, tzinfo=UTC))
    BoardFactory(game=game, slug="kills", mode="total", max_score=200, rank_display="shared", windows=["all", "daily"])
    SeasonFactory(game=game, slug="s0", name="Season 0", starts_at=datetime(2026, 8, 1, tzinfo=UTC),
                  ends_at=datetime(2026, 11, 1, tzinfo=UTC))  # fmt: skip
    body = Client().get("/api/v1/games/chess").json()
    assert body["slug"] == "chess" and body["name"] == "Chess" and body["reset_timezone"] == "UTC"
    assert [b["slug"] for b in body["boards"]] == ["rating", "golf", "points", "kills"]
    assert body["boards"][1] == {
        "slug": "golf",
        "name": "Golf",
        "order": "asc",
        "mode": "best",
        "windows": ["all", "daily", "weekly", "monthly", "season"],
        "min_score": 18,
        "max_score": 200,
        "rank_display": "unique",
        "format": "integer",
        "regions": False,
    }
    assert body["boards"][3]["mode"] == "total" and body["boards"][3]["rank_display"] == "shared"
    assert body["boards"][3]["windows"] == ["all", "daily"]
    assert body["seasons"] == [
        {"slug": "s0", "name": "Season 0", "starts_at": "2026-08-01T00:00:00Z", "ends_at": "2026-11-01T00:00:00Z"},
        {"slug": "s1", "name": "S1", "starts_at": "2026-11-01T00:00:00Z", "ends_at": "2027-02-01T00:00:00Z"},
    ]
    assert body["regions"] == [{"slug": "eu", "timezone": "Europe/Paris"}]


def test_an_unknown_game_is_a_404_with_the_error_body(game) -> None:
    response = Client().get("/api/v1/games/nope")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "unknown_game"


def test_the_schema_documents_the_game_description(game) -> None:
    text = Client().get("/api/schema/").content.decode()
    assert "/api/v1/games/{game}:" in text and "/api/v1/games:" in text and "rank_display" in text
