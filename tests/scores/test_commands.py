"""Operator commands (docs/api.md §2): apply_game_config and create_server_key."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from scores.models import Board, Game, Season, ServerKey
from tests.conftest import SignedClient

GAME_FILE_EXAMPLE = """
[game]
slug = "chess"
name = "Chess"
reset_timezone = "UTC"

[[boards]]
slug = "rating"
name = "Rating"
order = "desc"
mode = "best"
windows = ["all", "daily", "weekly", "monthly", "season"]
min_score = 0
max_score = 10000000
rank_display = "unique"

[[seasons]]
slug = "s1"
name = "Season 1"
starts_at = "2026-11-01T00:00:00Z"
ends_at   = "2027-02-01T00:00:00Z"
"""


def apply(tmp_path: Path, text: str) -> str:
    path = tmp_path / "game.toml"
    path.write_text(text)
    out = StringIO()
    call_command("apply_game_config", str(path), stdout=out)
    return out.getvalue()


def test_the_example_game_file_applies_and_is_idempotent(transactional_db, tmp_path: Path) -> None:
    first = apply(tmp_path, GAME_FILE_EXAMPLE)
    assert "created game chess" in first
    board = Board.objects.get(game__slug="chess", slug="rating")
    assert (board.order, board.mode, board.max_score, board.windows) == (
        "desc",
        "best",
        10_000_000,
        ["all", "daily", "weekly", "monthly", "season"],
    )
    assert Season.objects.get(slug="s1").ends_at.year == 2027
    snapshot = list(Board.objects.values()) + list(Game.objects.values()) + list(Season.objects.values())
    second = apply(tmp_path, GAME_FILE_EXAMPLE)
    assert "unchanged" in second
    assert list(Board.objects.values()) + list(Game.objects.values()) + list(Season.objects.values()) == snapshot


def test_demo_file_applies(transactional_db) -> None:
    out = StringIO()
    call_command("apply_game_config", "games/demo.toml", stdout=out)
    assert Board.objects.filter(game__slug="demo").count() == 3


def test_update_changes_only_what_changed(transactional_db, tmp_path: Path) -> None:
    apply(tmp_path, GAME_FILE_EXAMPLE)
    out = apply(tmp_path, GAME_FILE_EXAMPLE.replace('name = "Rating"', 'name = "Elo"'))
    assert "updated board rating: name" in out
    assert Board.objects.get(slug="rating").name == "Elo"


@pytest.mark.parametrize(
    "change, key",
    [
        (("max_score = 10000000", "max_score = 100000000"), "boards[0].max_score"),
        (('reset_timezone = "UTC"', 'reset_timezone = "Mars/Olympus"'), "game.reset_timezone"),
        (('order = "desc"', 'order = "sideways"'), "boards[0].order"),
        (('windows = ["all", "daily", "weekly", "monthly", "season"]', 'windows = ["hourly"]'), "boards[0].windows"),
        (('slug = "rating"', 'slug = "Rating!"'), "boards[0].slug"),
        (("min_score = 0", 'min_score = "zero"'), "boards[0].min_score"),
        (('rank_display = "unique"', 'rank_display = "unique"\ncolour = "red"'), "boards[0].colour"),
        (('ends_at   = "2027-02-01T00:00:00Z"', 'ends_at   = "2026-10-01T00:00:00Z"'), "seasons[0].ends_at"),
        (('starts_at = "2026-11-01T00:00:00Z"', 'starts_at = "2026-11-01"'), "seasons[0].starts_at"),
        (('mode = "best"', 'mode = "total"\nmax_total = 99999999'), "boards[0].max_total"),
        (('mode = "best"', 'mode = "latest"\nmax_total = 1000'), "boards[0].max_total"),
        (('mode = "best"', 'mode = "best"\nmin_total = -5'), "boards[0].min_total"),
        (('mode = "best"', 'mode = "newest"'), "boards[0].mode"),
        (
            ('mode = "best"\nwindows = ["all", "daily"', 'mode = "latest"\nwindows = ["last7d", "all", "daily"'),
            "boards[0].windows",
        ),
        (
            (
                'mode = "best"\nwindows = ["all", "daily", "weekly", "monthly", "season"]\nmin_score = 0',
                'mode = "total"\nwindows = ["all", "daily", "last7d"]\nmin_score = -5',
            ),
            "boards[0].windows",
        ),
        (('mode = "best"', 'mode = "total"\nmin_total = -5'), "boards[0].min_total"),
        (
            (
                'mode = "best"\nwindows = ["all", "daily", "weekly", "monthly", "season"]\nmin_score = 0',
                'mode = "total"\nmin_total = 3\nwindows = ["all", "daily", "weekly", "monthly", "season"]\nmin_score = -5',
            ),
            "boards[0].min_total",
        ),
        (('mode = "best"', 'mode = "total"\nsubscores = [{name = "kills", max = 9}]'), "boards[0].subscores"),
        (
            ('rank_display = "unique"', 'rank_display = "unique"\nsubscores = [{name = "kills", max = 1000}]'),
            "boards[0].subscores[0].max",
        ),
        (("[game]", "[game"), "(file)"),
        (('reset_timezone = "UTC"', 'allowed_origins = "https://play.example.com"'), "game.allowed_origins"),
        (('reset_timezone = "UTC"', 'allowed_origins = ["https://play.example.com/game"]'), "game.allowed_origins"),
        (('reset_timezone = "UTC"', 'allowed_origins = ["*"]'), "game.allowed_origins"),
        (('reset_timezone = "UTC"', 'allowed_origins = ["https://*.example.com"]'), "game.allowed_origins"),
        (('reset_timezone = "UTC"', 'allowed_origins = ["play.example.com"]'), "game.allowed_origins"),
        (('reset_timezone = "UTC"', 'allowed_origins = ["ftp://play.example.com"]'), "game.allowed_origins"),
        (
            ('reset_timezone = "UTC"', 'allowed_origins = ["https://a.example", "https://A.example:443"]'),
            "game.allowed_origins",
        ),
    ],
)
def test_invalid_file_is_refused_whole_naming_the_key(transactional_db, tmp_path: Path, change, key) -> None:
    text = GAME_FILE_EXAMPLE.replace(*change)
    with pytest.raises(CommandError) as err:
        apply(tmp_path, text)
    assert key in str(err.value)
    assert not Game.objects.exists() and not Board.objects.exists()


@pytest.mark.parametrize(
    "change, says",
    [
        (
            ('mode = "best"', 'mode = "latest"\nmax_total = 1000'),
            "boards[0].max_total: only total boards have a max_total (a latest board's value is one result",
        ),
        (
            ('mode = "best"\nwindows = ["all", "daily"', 'mode = "latest"\nwindows = ["last7d", "all", "daily"'),
            "boards[0].windows: latest boards keep no rolling windows (last7d, last30d)",
        ),
        (
            ('mode = "best"\nwindows = ["all", "daily", "weekly", "monthly", "season"]\nmin_score = 0',
             'mode = "total"\nwindows = ["all", "daily", "last30d"]\nmin_score = -5'),
            "boards[0].windows: total boards whose results may subtract keep no rolling windows",
        ),
        (
            ('rank_display = "unique"', 'rank_display = "unique"\nsubscores = [{name = "kills", max = 1000}]'),
            "boards[0].subscores[0].max: (max_score - min_score + 1) * (kills: max - min + 1) = 10,000,001 * 1,001",
        ),
    ],
)  # fmt: skip
def test_the_new_modes_refusals_say_which_key_and_why(transactional_db, tmp_path: Path, change, says) -> None:
    with pytest.raises(CommandError) as err:
        apply(tmp_path, GAME_FILE_EXAMPLE.replace(*change))
    assert says in str(err.value)
    assert not Board.objects.exists()


def test_allowed_origins_are_stored_as_browsers_send_them(transactional_db, tmp_path: Path) -> None:
    """docs/clients.md: the Origin header is lower case and omits the scheme's default port."""
    text = GAME_FILE_EXAMPLE.replace(
        'reset_timezone = "UTC"',
        'reset_timezone = "UTC"\nallowed_origins = ["https://Play.Example.com:443", "http://127.0.0.2:9000"]',
    )
    assert "created game chess" in apply(tmp_path, text)
    assert Game.objects.get(slug="chess").allowed_origins == ["https://play.example.com", "http://127.0.0.2:9000"]
    assert "unchanged" in apply(tmp_path, text)
    assert "allowed_origins" in apply(tmp_path, GAME_FILE_EXAMPLE)  # removed from the file: removed
    assert Game.objects.get(slug="chess").allowed_origins == []


SPENT = GAME_FILE_EXAMPLE.replace('mode = "best"', 'mode = "total"').replace("min_score = 0", "min_score = -500")


@pytest.mark.parametrize(
    "extra, key",
    [
        ("min_total = 5", "boards[0].min_total"),  # a total starts at 0: its floor is at most 0
        ('min_total = "low"', "boards[0].min_total"),
        ("max_total = 16777216\nmin_total = -1", "boards[0].max_total"),  # the span from the floor must fit
    ],
)
def test_totals_that_subtract_are_checked_naming_the_key(transactional_db, tmp_path: Path, extra, key) -> None:
    with pytest.raises(CommandError) as err:
        apply(tmp_path, SPENT.replace('rank_display = "unique"', f'rank_display = "unique"\n{extra}'))
    assert key in str(err.value)
    with pytest.raises(CommandError) as err:
        apply(tmp_path, SPENT.replace('"monthly", "season"]', '"monthly", "season", "last7d"]'))
    assert "boards[0].windows" in str(err.value)
    assert not Game.objects.exists()


def test_a_total_that_subtracts_applies_with_its_floor(transactional_db, tmp_path: Path) -> None:
    apply(tmp_path, SPENT.replace('rank_display = "unique"', 'rank_display = "unique"\nmin_total = -100'))
    board = Board.objects.get(slug="rating")
    assert (board.mode, board.min_score, board.min_total) == ("total", -500, -100)
    assert "unchanged" in apply(
        tmp_path, SPENT.replace('rank_display = "unique"', 'rank_display = "unique"\nmin_total = -100')
    )


def test_bit_budget_refusal_says_why(transactional_db, tmp_path: Path) -> None:
    with pytest.raises(CommandError) as err:
        apply(tmp_path, GAME_FILE_EXAMPLE.replace("max_score = 10000000", "max_score = 20000000"))
    message = str(err.value)
    assert "boards[0].max_score" in message and "bits" in message and "16,777,216" in message


def test_changing_the_ranking_of_a_board_with_scores_is_refused(server: SignedClient, game, tmp_path: Path) -> None:
    body = {
        "match_id": "m",
        "ended_at": "2026-11-28T00:00:00Z",
        "results": [{"player": "p", "board": "rating", "score": 5}],
    }
    assert server.post("/api/v1/games/chess/matches", body).status_code == 201
    with pytest.raises(CommandError) as err:
        apply(tmp_path, GAME_FILE_EXAMPLE.replace('order = "desc"', 'order = "asc"'))
    assert "boards[0]" in str(err.value)
    assert Board.objects.get(game=game, slug="rating").order == "desc"


def test_create_server_key_prints_a_working_key(game) -> None:
    out = StringIO()
    call_command("create_server_key", "chess", "eu-1", stdout=out)
    printed = json.loads(out.getvalue())
    assert set(printed) == {"key_id", "secret"}
    key = ServerKey.objects.get(key_id=printed["key_id"])
    assert key.scopes == ["submit"] and key.name == "eu-1"
    client = SignedClient(printed["key_id"], printed["secret"])
    body = {
        "match_id": "m",
        "ended_at": "2026-11-28T00:00:00Z",
        "results": [{"player": "p", "board": "rating", "score": 5}],
    }
    assert client.post("/api/v1/games/chess/matches", body).status_code == 201


def test_create_server_key_with_scopes_and_errors(game) -> None:
    out = StringIO()
    call_command("create_server_key", "chess", "mod", "--scopes", "submit,moderate", stdout=out)
    assert ServerKey.objects.get(key_id=json.loads(out.getvalue())["key_id"]).scopes == ["moderate", "submit"]
    with pytest.raises(CommandError):
        call_command("create_server_key", "nope", "x", stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("create_server_key", "chess", "x", "--scopes", "admin", stdout=StringIO())


@pytest.mark.parametrize("scopes", [["submit,moderate"], ["submit", "moderate"], ["submit,", "moderate"]])
def test_create_server_key_scopes_by_commas_or_spaces(game, scopes: list[str]) -> None:
    out = StringIO()
    call_command("create_server_key", "chess", "mod", "--scopes", *scopes, stdout=out)
    assert ServerKey.objects.get(key_id=json.loads(out.getvalue())["key_id"]).scopes == ["moderate", "submit"]


def test_make_manage_prints_only_the_commands_output(game) -> None:
    """`make manage ... | jq` works: make does not echo its command line, and the environment
    lookup and the virtualenv check write to stderr, so stdout is exactly the key's JSON."""
    import os
    import subprocess

    from django.conf import settings
    from django.db import connection

    s = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
    }
    args = "ARGS=create_server_key chess piped --scopes submit moderate"
    done = subprocess.run(
        ["make", "--no-print-directory", "manage", args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    printed = json.loads(done.stdout)
    assert set(printed) == {"key_id", "secret"}
    assert ServerKey.objects.get(key_id=printed["key_id"]).scopes == ["moderate", "submit"]
