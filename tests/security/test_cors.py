"""CORS for browser game clients (leaderboard_project/cors.py, docs/clients.md): the headers a
browser reads, through the Django test client. tests/e2e/test_browser_clients.py checks the
same in Chromium."""

from __future__ import annotations

import pytest
from django.test import Client

from scores.models import Game, Player
from scores.selectors import config_cache_clear
from scores.services import player_token_issue
from tests.conftest import SignedClient

GAME_ORIGIN = "https://play.chess.example"
OTHER = "https://evil.example"
PLAYER = "/api/v1/games/chess/boards/rating/players/p1"
TOP = "/api/v1/games/chess/boards/rating/top"
HISTOGRAM = "/api/v1/games/chess/boards/rating/histogram"


@pytest.fixture
def ranked(server: SignedClient) -> str:
    """chess with one allowed origin, p1 on the board; p1's token."""
    Game.objects.filter(slug="chess").update(allowed_origins=[GAME_ORIGIN])
    config_cache_clear()
    r = server.post(
        "/api/v1/games/chess/matches",
        {
            "match_id": "m1",
            "ended_at": "2026-11-29T18:00:00Z",
            "results": [{"player": "p1", "board": "rating", "score": 5}],
        },
    )
    assert r.status_code == 201, r.content
    token, _ = player_token_issue(player=Player.objects.get(game__slug="chess", external_id="p1"))
    return token


def test_an_allowed_origin_reads_a_players_rank_with_the_token(ranked: str) -> None:
    r = Client().get(PLAYER, headers={"Origin": GAME_ORIGIN, "Authorization": f"Bearer {ranked}"})
    assert r.status_code == 200
    assert r.json()["rank"] == 1
    assert r["Access-Control-Allow-Origin"] == GAME_ORIGIN
    assert "Origin" in r["Vary"]
    assert "Access-Control-Allow-Credentials" not in r  # the token, never the cookies
    assert r["Access-Control-Expose-Headers"] == "Retry-After"


def test_the_preflight_of_an_allowed_origin_allows_the_token_header(ranked: str) -> None:
    r = Client().options(
        PLAYER,
        headers={
            "Origin": GAME_ORIGIN,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert r.status_code == 204
    assert r["Access-Control-Allow-Origin"] == GAME_ORIGIN
    assert "GET" in r["Access-Control-Allow-Methods"]
    assert "POST" not in r["Access-Control-Allow-Methods"]
    assert "authorization" in r["Access-Control-Allow-Headers"]
    assert int(r["Access-Control-Max-Age"]) > 0


def test_another_origin_gets_no_cors_headers_and_the_request_goes_on_as_before(ranked: str) -> None:
    auth = {"Authorization": f"Bearer {ranked}"}
    for origin in (OTHER, GAME_ORIGIN + "/", GAME_ORIGIN.upper(), "null", GAME_ORIGIN + ":443"):
        r = Client().get(PLAYER, headers={"Origin": origin, **auth})
        assert r.status_code == 200  # the answer is the same; the browser keeps it from the page
        assert not any(h.startswith("Access-Control-") for h in r.headers), origin
        pre = Client().options(PLAYER, headers={"Origin": origin, "Access-Control-Request-Method": "GET"})
        assert "Access-Control-Allow-Origin" not in pre, origin


def test_an_origin_of_another_game_is_not_allowed_here(ranked: str, server: SignedClient) -> None:
    Game.objects.create(slug="go", name="Go", allowed_origins=[OTHER])
    config_cache_clear()
    r = Client().get(PLAYER, headers={"Origin": OTHER, "Authorization": f"Bearer {ranked}"})
    assert "Access-Control-Allow-Origin" not in r


def test_the_operator_wide_setting_allows_an_origin_for_every_game(ranked: str, settings) -> None:
    settings.CORS_ALLOWED_ORIGINS = ["http://127.0.0.2:9000"]
    r = Client().get(PLAYER, headers={"Origin": "http://127.0.0.2:9000", "Authorization": f"Bearer {ranked}"})
    assert r["Access-Control-Allow-Origin"] == "http://127.0.0.2:9000"


def test_a_write_from_an_allowed_origin_is_not_opened_to_the_page(ranked: str) -> None:
    pre = Client().options(
        "/api/v1/games/chess/matches", headers={"Origin": GAME_ORIGIN, "Access-Control-Request-Method": "POST"}
    )
    # answered, but without POST among the methods: the browser sends nothing
    assert "POST" not in pre.get("Access-Control-Allow-Methods", "")
    r = Client().post(
        "/api/v1/games/chess/matches", data=b"{}", content_type="text/plain", headers={"Origin": GAME_ORIGIN}
    )
    assert r.status_code == 401
    assert "Access-Control-Allow-Origin" not in r


@pytest.mark.parametrize("path", [TOP, HISTOGRAM])
def test_public_reads_are_readable_from_any_origin(ranked: str, path: str) -> None:
    for headers in ({"Origin": OTHER}, {"Origin": GAME_ORIGIN}, {}):
        r = Client().get(path, headers=headers)
        assert r.status_code == 200
        # the same header with or without an Origin: a cache in front keeps one copy for all
        assert r["Access-Control-Allow-Origin"] == "*"
        assert "Origin" not in r.get("Vary", "")
    pre = Client().options(
        path,
        headers={
            "Origin": OTHER,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert pre.status_code == 204
    assert pre["Access-Control-Allow-Origin"] == "*"
    assert "authorization" in pre["Access-Control-Allow-Headers"]


def test_public_top_keeps_its_cache_control(ranked: str) -> None:
    r = Client().get(TOP, headers={"Origin": OTHER})
    assert r["Cache-Control"] == "public, max-age=1"
    assert r.json()["entries"][0]["player"] == "p1"


def test_pages_keep_their_content_security_policy_and_get_no_cors_headers(ranked: str) -> None:
    r = Client().get("/games/chess/boards/rating/", headers={"Origin": OTHER})
    assert r.status_code == 200
    policy = r["Content-Security-Policy"]
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert not any(h.startswith("Access-Control-") for h in r.headers)
    api = Client().get(PLAYER, headers={"Origin": GAME_ORIGIN, "Authorization": f"Bearer {ranked}"})
    assert "Content-Security-Policy" not in api
