"""CSV of any board window, current or frozen, from the admin and from the signed API route
GET /api/v1/games/{game}/boards/{board}/export."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from scores.selectors import cached_board
from seasons import services
from seasons.export import HEADER, text_cell
from tests.boards.conftest import URL, submit
from tests.conftest import SignedClient
from tests.factories import server_key
from tests.scores.test_ingest_api import assert_error
from tests.seasons.conftest import AFTER_GRACE, DAY

pytestmark = pytest.mark.usefixtures("real_projector")  # the results reach the boards as users' do


def rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200, getattr(response, "content", b"")
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_a_frozen_window_exports_its_standings_and_a_current_one_its_values(day: SignedClient) -> None:
    services.windows_close(now=AFTER_GRACE)
    frozen = rows(day.get(URL + f"/boards/rating/export?window=daily:{DAY}"))
    assert list(frozen[0]) == HEADER
    assert [r["player"] for r in frozen][:3] == ["early", "p0", "p1"]  # the tie by time, then by id
    assert {r["version"] for r in frozen} == {"1"} and [r["position"] for r in frozen] == [str(i) for i in range(1, 11)]
    live = rows(day.get(URL + "/boards/rating/export?window=all"))
    assert [r["player"] for r in live] == [r["player"] for r in frozen]
    assert {r["version"] for r in live} == {"live"} and {r["window"] for r in live} == {"all"}


def test_the_export_follows_a_correction_and_keeps_every_version(day: SignedClient) -> None:
    services.windows_close(now=AFTER_GRACE)
    board = cached_board("chess", board_slug="rating")
    from scores.models import Match

    match = Match.objects.get(match_id="d2")
    from anticheat.services import Actor, match_void

    match_void(match=match, reason="bot", actor=Actor.rules("test"))
    latest = rows(day.get(URL + f"/boards/rating/export?window=daily:{DAY}"))
    assert latest[0]["player"] == "p0" and {r["version"] for r in latest} == {"2"} and len(latest) == 9
    first = rows(day.get(URL + f"/boards/rating/export?window=daily:{DAY}&version=1"))
    assert first[0]["player"] == "early" and len(first) == 10
    assert_error(day.get(URL + f"/boards/rating/export?window=daily:{DAY}&version=3"), 404, "unknown_version")
    assert board is not None


def test_the_export_needs_a_signature_of_the_game(day: SignedClient, game) -> None:
    assert_error(Client().get(URL + "/boards/rating/export?window=all"), 401, "not_authenticated")
    from tests.factories import GameFactory

    other_key, other_secret = server_key(GameFactory(slug="other"))
    assert_error(
        SignedClient(other_key.key_id, other_secret).get(URL + "/boards/rating/export?window=all"), 403, "forbidden"
    )
    moderate_key, secret = server_key(game, scopes=("moderate",))
    assert rows(SignedClient(moderate_key.key_id, secret).get(URL + "/boards/rating/export?window=all"))
    assert_error(day.get(URL + "/boards/nope/export?window=all"), 404, "unknown_board")
    assert_error(day.get(URL + "/boards/rating/export?window=hourly"), 404, "unknown_window")
    assert_error(day.get(URL + "/boards/rating/export?window=season:nope"), 404, "unknown_window")
    assert rows(day.get(URL + "/boards/rating/export?window=weekly:1999-W01")) == []  # a window nobody played


def test_the_admin_exports_any_window(day: SignedClient) -> None:
    services.windows_close(now=AFTER_GRACE)
    User.objects.create_superuser("admin", "a@example.com", "pw")
    client = Client()
    client.login(username="admin", password="pw")
    board = cached_board("chess", board_slug="rating")
    assert client.get("/admin/seasons/windowfreeze/export/").status_code == 200
    now = timezone.now()
    submit(day, "today", [{"player": "now", "board": "rating", "score": 7}], at=now.isoformat())
    live = rows(client.get("/admin/seasons/windowfreeze/export/", {"board": board.id, "window": "daily"}))
    # today's window (chess resets at midnight UTC): the one player of today, live values
    assert [(r["player"], r["version"], r["window"]) for r in live] == [("now", "live", f"daily:{now.date()}")]
    frozen = rows(client.get("/admin/seasons/windowfreeze/export/", {"board": board.id, "window": f"daily:{DAY}"}))
    assert len(frozen) == 10 and frozen[0]["version"] == "1"
    bad = client.get("/admin/seasons/windowfreeze/export/", {"board": board.id, "window": "hourly"})
    assert bad.status_code == 200 and b"errorlist" in bad.content


def test_a_big_window_streams(server: SignedClient, game) -> None:
    results = [{"player": f"q{i:04d}", "board": "rating", "score": i} for i in range(100)]
    for n in range(0, 100, 50):
        submit(server, f"big{n}", results[n : n + 50], at=f"{DAY}T10:00:00Z")
    response = server.get(URL + "/boards/rating/export?window=all")
    assert response.streaming
    got = rows(response)
    assert [r["player"] for r in got] == [f"q{i:04d}" for i in range(99, -1, -1)]


def test_text_a_spreadsheet_would_run_is_exported_as_text(server: SignedClient, game) -> None:
    """Game servers choose ids and display names: a cell starting =, +, -, @, a tab or a carriage
    return opens as text, not as a formula (docs/api.md §10)."""
    names = {
        "p-link": '=HYPERLINK("http://x.example/","click")',
        "p-plus": "+1+2",
        "p-at": "@SUM(A1)",
        "p-plain": "Ana",
    }
    results = [
        {"player": p, "board": "rating", "score": 50 + i, "display_name": n} for i, (p, n) in enumerate(names.items())
    ]
    results.append({"player": "-1", "board": "rating", "score": 3})
    results.append({"player": "@me", "board": "rating", "score": 2})
    submit(server, "formulas", results)
    exported = rows(server.get(URL + "/boards/rating/export?window=all"))
    by_player = {r["player"]: r for r in exported}
    assert {p: by_player[p]["display_name"] for p in names} == {
        "p-link": '\'=HYPERLINK("http://x.example/","click")',
        "p-plus": "'+1+2",
        "p-at": "'@SUM(A1)",
        "p-plain": "Ana",
    }
    assert {"'-1", "'@me"} <= set(by_player)
    assert by_player["p-link"]["score"] == "50" and by_player["'-1"]["score"] == "3"


def test_a_leading_tab_or_carriage_return_is_text_too() -> None:
    """The API trims names before they are stored, so only this function can meet them today."""
    assert [text_cell(t) for t in ("\tcmd", "\rcmd", "a=b", "")] == ["'\tcmd", "'\rcmd", "a=b", ""]
