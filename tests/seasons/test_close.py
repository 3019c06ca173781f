"""Closing windows and frozen standings (docs/api.md §10), over results the real projector process
applied (tests/projector.py)."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board, Match, PlayerValue, Result, WindowCutoff
from scores.selectors import cached_board, config_cache_clear
from seasons import services
from seasons.models import StandingChange, WindowClose, WindowFreeze
from tests.boards.conftest import URL, submit
from tests.conftest import SignedClient
from tests.projector import projected
from tests.scores.test_ingest_api import assert_error
from tests.seasons.conftest import AFTER_GRACE, DAY

pytestmark = pytest.mark.usefixtures("real_projector")


def standings(window: str, **params) -> dict:
    response = Client().get(URL + f"/boards/rating/standings/{window}", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_nothing_is_frozen_before_the_grace_period_ends(day) -> None:
    report = services.windows_close(now=AFTER_GRACE - timedelta(seconds=1))
    assert not any("daily:2026-11-27" in label for label in report.frozen)
    assert_error(Client().get(URL + "/boards/rating/standings/daily:2026-11-27"), 404, "not_frozen")


def test_frozen_standings_equal_what_top_showed_at_the_boundary(day) -> None:
    shown = Client().get(URL + "/boards/rating/top", {"window": f"daily:{DAY}", "limit": 100}).json()
    report = services.windows_close(now=AFTER_GRACE)
    assert f"chess/rating daily:{DAY}" in report.frozen
    frozen = standings(f"daily:{DAY}")
    assert frozen["version"] == 1 and frozen["total"] == 10 and frozen["window"] == f"daily:{DAY}"
    assert [(e["rank"], e["player"], e["score"]) for e in frozen["entries"]] == [
        (e["rank"], e["player"], e["score"]) for e in shown["entries"]
    ]
    assert frozen["entries"][0]["player"] == "early"  # reached 100 first
    assert [e["position"] for e in frozen["entries"]] == list(range(1, 11))


def test_closing_twice_freezes_once(day) -> None:
    services.windows_close(now=AFTER_GRACE)
    again = services.windows_close(now=AFTER_GRACE + timedelta(minutes=1))
    assert not again.frozen and again.already > 0
    assert WindowFreeze.objects.filter(board__slug="rating", window=f"daily:{DAY}").count() == 1


def test_close_windows_command_with_now(day) -> None:
    out = io.StringIO()
    call_command("close_windows", "--now", AFTER_GRACE.isoformat(), stdout=out)
    assert f"frozen  chess/rating daily:{DAY}" in out.getvalue()
    out = io.StringIO()
    call_command("close_windows", "--now", AFTER_GRACE.isoformat(), stdout=out)
    assert "0 frozen" in out.getvalue()


def test_freezing_is_set_based(day) -> None:
    """The same statements for 10 players as for 1: no loop over players."""
    submit(day, "one", [{"player": "solo", "board": "golf", "score": 70}], at=f"{DAY}T10:00:00Z")
    counted = []
    for board_slug in ("rating", "golf"):
        with CaptureQueriesContext(connection) as ctx:
            freeze = services.window_freeze(
                board=cached_board("chess", board_slug=board_slug), window=f"daily:{DAY}", reason="test"
            )
        counted.append((freeze.entries, len(ctx.captured_queries)))
        inserts = [q for q in ctx.captured_queries if re.search(r"INSERT INTO seasons_standing(_\d+)? ", q["sql"])]
        assert len(inserts) == 1
    assert counted[0][0] == 10 and counted[1][0] == 1
    assert counted[0][1] == counted[1][1]


def test_shared_boards_freeze_competition_ranks(day, game) -> None:
    Board.objects.filter(game=game, slug="rating").update(rank_display="shared")
    config_cache_clear()
    services.windows_close(now=AFTER_GRACE)
    ranks = [(e["rank"], e["score"]) for e in standings(f"daily:{DAY}")["entries"]]
    assert ranks[:4] == [(1, 100), (1, 100), (1, 100), (4, 90)]


def test_a_late_result_for_a_frozen_window_counts_in_the_open_ones(day, game) -> None:
    services.windows_close(now=AFTER_GRACE)
    body = {
        "match_id": "late",
        "ended_at": f"{DAY}T23:59:58Z",
        "results": [{"player": "late", "board": "rating", "score": 999}],
    }
    response = day.post(URL + "/matches", body)
    assert response.status_code == 201
    assert response.json()["missed_windows"] == [f"daily:{DAY}"]
    projected()
    windows = set(PlayerValue.objects.filter(player__external_id="late").values_list("window", flat=True))
    assert f"daily:{DAY}" not in windows and {"all", "weekly:2026-W48", "monthly:2026-11", "season:s1"} <= windows
    assert standings(f"daily:{DAY}")["total"] == 10
    batch = day.post(URL + "/matches/batch", {"matches": [{**body, "match_id": "late2"}]}).json()["results"][0]
    assert batch["status"] == "accepted" and batch["missed_windows"] == [f"daily:{DAY}"]
    normal = day.post(URL + "/matches", {**body, "match_id": "fresh", "ended_at": "2026-11-29T10:00:00Z"})
    assert "missed_windows" not in normal.json()


def test_refreeze_keeps_every_version_and_records_who_moved(day, game) -> None:
    services.windows_close(now=AFTER_GRACE)
    board = cached_board("chess", board_slug="rating")
    # what a void does to the durable values: "early" loses their result
    PlayerValue.objects.filter(board_id=board.id, window=f"daily:{DAY}", player__external_id="early").delete()
    freezes = services.standings_refreeze(board=board, windows_=[f"daily:{DAY}", "all"], reason="void of d2 by mod")
    assert [(f.window, f.version) for f in freezes] == [(f"daily:{DAY}", 2)]  # "all" never freezes
    assert WindowFreeze.objects.filter(board_id=board.id, window=f"daily:{DAY}").count() == 2
    latest = standings(f"daily:{DAY}")
    assert latest["version"] == 2 and latest["total"] == 9 and latest["entries"][0]["player"] == "p0"
    # the earlier version stays readable (docs/api.md §10), as it was frozen
    first = standings(f"daily:{DAY}", version=1)
    assert first["version"] == 1 and first["total"] == 10 and first["entries"][0]["player"] == "early"
    assert standings(f"daily:{DAY}", version=2) == latest
    missing = Client().get(URL + f"/boards/rating/standings/daily:{DAY}", {"version": 3})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_version"
    bad = Client().get(URL + f"/boards/rating/standings/daily:{DAY}", {"version": 0})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_body"
    moves = {c.player.external_id: (c.old_rank, c.new_rank) for c in StandingChange.objects.select_related("player")}
    assert moves["early"] == (1, None)
    assert moves["p0"] == (2, 1) and moves["p8"] == (10, 9)


def test_season_close_waits_for_held_matches_in_its_top(server: SignedClient, game) -> None:
    game.seasons.filter(slug="s1").update(ends_at=datetime(2027, 2, 1, tzinfo=UTC))
    config_cache_clear()
    submit(server, "s", [{"player": "a", "board": "rating", "score": 50}], at="2026-11-20T00:00:00Z")
    held = Match.objects.create(
        game=game, match_id="h", ended_at=datetime(2026, 12, 1, tzinfo=UTC), body_hash="x", status="held"
    )
    Result.objects.create(
        match=held,
        player=PlayerValue.objects.first().player,
        board=game.boards.get(slug="rating"),
        score=70,
        ended_at=held.ended_at,
    )
    after_season = datetime(2027, 2, 1, 0, 10, tzinfo=UTC)
    report = services.windows_close(now=after_season)
    assert "chess/rating season:s1" in report.waiting
    state = WindowClose.objects.get(board__slug="rating", window="season:s1")
    assert state.state == "waiting" and "h" in state.detail and "top 1000" in state.detail
    held.status = "accepted"
    held.save()
    assert "chess/rating season:s1" in services.windows_close(now=after_season).frozen
    assert WindowClose.objects.get(board__slug="rating", window="season:s1").state == "frozen"


def test_standings_endpoint_errors_and_paging(day) -> None:
    assert_error(Client().get(URL + "/boards/rating/standings/daily"), 404, "unknown_window")
    assert_error(Client().get(URL + "/boards/rating/standings/yearly:2026"), 404, "unknown_window")
    assert_error(Client().get(URL + "/boards/nope/standings/daily:2026-11-27"), 404, "unknown_board")
    services.windows_close(now=AFTER_GRACE)
    page = standings(f"daily:{DAY}", limit=3, offset=2)
    assert [e["position"] for e in page["entries"]] == [3, 4, 5]
    assert_error(Client().get(URL + f"/boards/rating/standings/daily:{DAY}", {"limit": 0}), 400, "invalid_body")


def test_admin_exports_standings_as_csv(day) -> None:
    services.windows_close(now=AFTER_GRACE)
    User.objects.create_superuser("admin", "a@example.com", "pw")
    client = Client()
    client.login(username="admin", password="pw")
    freeze = WindowFreeze.objects.get(board__slug="rating", window=f"daily:{DAY}")
    response = client.post("/admin/seasons/windowfreeze/", {"action": "export_csv", "_selected_action": [freeze.pk]})
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 10 and rows[0]["player"] == "early" and rows[0]["rank"] == "1"
    assert client.get(f"/admin/seasons/windowfreeze/{freeze.pk}/change/").status_code == 200
    assert client.get("/admin/seasons/windowclose/").status_code == 200


def test_closed_windows_expire_from_redis_after_their_retention(server: SignedClient, game) -> None:
    """Expiry is absolute (EXPIREAT): the match is an hour old, not on a fixed date, or the
    calendar would overtake the expected expiry and Redis drop the key on write."""
    game.retention_periods = 1
    game.save()
    config_cache_clear()
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    submit(server, "x", [{"player": "a", "board": "rating", "score": 5}], at=at.isoformat())
    board = cached_board("chess", board_slug="rating")
    r = get_redis()
    day = at.date()
    next_midnight = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
    grace = timedelta(seconds=300)
    # a day's set stays readable through one more day, plus the close grace
    daily = r.expiretime(keys.board_key(board.id, f"daily:{day.isoformat()}"))
    assert daily == int((next_midnight + timedelta(days=1) + grace).timestamp())
    assert r.ttl(keys.board_key(board.id, "all")) == -1
    year, week, weekday = day.isocalendar()
    week_end = next_midnight + timedelta(days=7 - weekday)
    weekly = r.expiretime(keys.board_key(board.id, f"weekly:{year}-W{week:02d}"))
    assert weekly == int((week_end + timedelta(days=7) + grace).timestamp())  # + one week


def test_one_games_failed_freeze_leaves_every_other_game_closing(day, settings) -> None:
    """A game whose freeze fails (here its stored webhook list is damaged, so the freeze's outbox
    write raises inside the freeze) is reported, shown in the admin's close state, and tried again
    by the next run; the other games' windows are frozen all the same (docs/windows.md)."""
    from scores.models import Game
    from tests.factories import BoardFactory, GameFactory, server_key

    other = GameFactory(slug="go")
    BoardFactory(game=other, slug="rating")
    key, secret = server_key(other, scopes=("submit",))
    response = SignedClient(key.key_id, secret).post(
        "/api/v1/games/go/matches",
        {"match_id": "g1", "ended_at": f"{DAY}T10:00:00Z", "results": [{"player": "x", "board": "rating", "score": 5}]},
    )
    assert response.status_code == 201, response.content
    Game.objects.filter(slug="chess").update(webhooks=[{"url": "http://receiver.example/"}])  # no "events"
    config_cache_clear()

    report = services.windows_close(now=AFTER_GRACE)
    assert f"go/rating daily:{DAY}" in report.frozen
    assert report.failed and all(line.startswith("chess/") for line in report.failed)  # every chess window, only
    assert any(line.startswith(f"chess/rating daily:{DAY}: KeyError") for line in report.failed)
    assert Client().get(f"/api/v1/games/go/boards/rating/standings/daily:{DAY}").json()["total"] == 1
    assert_error(Client().get(URL + f"/boards/rating/standings/daily:{DAY}"), 404, "not_frozen")
    failed = WindowClose.objects.get(board__game__slug="chess", board__slug="rating", window=f"daily:{DAY}")
    assert failed.state == WindowClose.State.FAILED and "KeyError" in failed.detail
    # the failed window is not left cut off: a late result still counts in it
    assert not WindowCutoff.objects.filter(board__game__slug="chess", window=f"daily:{DAY}").exists()
    submit(day, "late", [{"player": "late", "board": "rating", "score": 1}], at=f"{DAY}T23:00:00Z")
    assert "late" in [e["player"] for e in top(f"daily:{DAY}")]
    with pytest.raises(CommandError, match="window.s. failed to close"):
        call_command("close_windows", now=AFTER_GRACE.isoformat(), stdout=io.StringIO(), stderr=io.StringIO())

    Game.objects.filter(slug="chess").update(webhooks=[])
    config_cache_clear()
    again = services.windows_close(now=AFTER_GRACE + timedelta(minutes=1))
    assert f"chess/rating daily:{DAY}" in again.frozen and again.failed == []
    assert standings(f"daily:{DAY}")["total"] == 11


def top(window: str) -> list[dict]:
    response = Client().get(URL + "/boards/rating/top", {"window": window, "limit": 100})
    assert response.status_code == 200, response.content
    return response.json()["entries"]


def test_a_failed_freeze_keeps_its_cutoff_only_if_a_result_arrived_under_it(day) -> None:
    """A result received while a failed freeze's cutoff stood was applied without the window:
    then the cutoff stays (the values keep agreeing with it) and the next freeze uses it; with no
    such result it is lifted (docs/windows.md)."""
    from scores.cutoffs import window_cutoff_set
    from scores.selectors import cached_game_config

    board = cached_board("chess", board_slug="rating")
    config = cached_game_config("chess")
    window_cutoff_set(game_id=board.game_id, board_id=board.id, window=f"daily:{DAY}")
    assert services.window_cutoff_lift(board, window=f"daily:{DAY}", config=config)
    assert not WindowCutoff.objects.filter(board_id=board.id, window=f"daily:{DAY}").exists()

    window_cutoff_set(game_id=board.game_id, board_id=board.id, window=f"daily:{DAY}")
    submit(day, "kept-out", [{"player": "kept", "board": "rating", "score": 500}], at=f"{DAY}T23:00:00Z")
    assert "kept" not in [e["player"] for e in top(f"daily:{DAY}")]
    assert not services.window_cutoff_lift(board, window=f"daily:{DAY}", config=config)
    assert WindowCutoff.objects.filter(board_id=board.id, window=f"daily:{DAY}").exists()
    services.windows_close(now=AFTER_GRACE)
    assert "kept" not in [e["player"] for e in standings(f"daily:{DAY}")["entries"]]
