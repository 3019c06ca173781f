"""A sub-score's name (docs/game-config.md, `subscores`; docs/api.md §2.3): 1-64 lowercase
letters, digits, `-` and `_`, the first a letter or digit. Not a board slug: `time_ms` is a
name. A game file declaring one applies through the operator's command, and the name travels
unchanged through the signed API, the real projector and every read that answers sub-scores."""

from __future__ import annotations

import csv
import io
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from scores.models import Board, Game
from tests.conftest import SignedClient
from tests.factories import server_key
from tests.projector import projected

GAME = """
[game]
slug = "race"
name = "Race"

[[boards]]
slug = "sprint"
name = "Sprint"
order = "desc"
mode = "best"
windows = ["all"]
min_score = 0
max_score = 100
subscores = [{{name = "{name}", order = "asc", max = 60000}}]
"""
URL = "/api/v1/games/race"
MESSAGE = "is not a sub-score name (1-64 lowercase letters, digits, - and _, the first a letter or digit)"


def apply(tmp_path: Path, name: str) -> str:
    path = tmp_path / "race.toml"
    path.write_text(GAME.format(name=name))
    out = StringIO()
    call_command("apply_game_config", str(path), stdout=out)
    return out.getvalue()


@pytest.mark.usefixtures("real_projector")
def test_a_time_ms_subscore_applies_and_is_submitted_and_read_back(transactional_db, tmp_path: Path) -> None:
    assert "created board sprint" in apply(tmp_path, "time_ms")
    assert Board.objects.get(slug="sprint").subscores == [{"name": "time_ms", "order": "asc", "min": 0, "max": 60000}]
    key, secret = server_key(Game.objects.get(slug="race"), scopes=("submit", "moderate"))
    server = SignedClient(key.key_id, secret)
    match = {
        "match_id": "r1",
        "ended_at": "2026-11-29T18:00:00Z",
        "results": [
            {"player": "slow", "board": "sprint", "score": 90, "subscores": {"time_ms": 5100}},
            {"player": "quick", "board": "sprint", "score": 90, "subscores": {"time_ms": 4200}},
        ],
    }
    response = server.post(f"{URL}/matches", match)
    assert response.status_code == 201, response.content
    projected("match r1 on the boards")
    # the same score: the lower time_ms ranks first (order = "asc")
    top = server.get(f"{URL}/boards/sprint/top?window=all")
    assert top.status_code == 200, top.content
    assert [(e["player"], e["score"], e["subscores"]) for e in top.json()["entries"]] == [
        ("quick", 90, {"time_ms": 4200}),
        ("slow", 90, {"time_ms": 5100}),
    ]
    export = server.get(f"{URL}/boards/sprint/export?window=all")
    assert export.status_code == 200, export.content
    text = b"".join(export.streaming_content).decode() if export.streaming else export.content.decode()
    exported = list(csv.DictReader(io.StringIO(text)))
    assert [(r["player"], r["subscores.time_ms"]) for r in exported] == [("quick", "4200"), ("slow", "5100")]
    page = Client().get("/games/race/boards/sprint/?window=all")
    assert page.status_code == 200
    assert 'data-subscores="time_ms"' in page.content.decode()  # live.js fills the column by this name


@pytest.mark.parametrize("name", ["Time_ms", "_time", "-time", "time ms", "time.ms", "t" * 65])
def test_a_subscore_name_outside_the_form_is_refused_naming_the_key(
    transactional_db, tmp_path: Path, name: str
) -> None:
    with pytest.raises(CommandError) as err:
        apply(tmp_path, name)
    assert (
        str(err.value)
        == f"{tmp_path / 'race.toml'}: refused, nothing applied: boards[0].subscores[0].name: {name!r} {MESSAGE}"
    )
    assert not Game.objects.exists() and not Board.objects.exists()


@pytest.mark.parametrize("name", ["t" * 64, "2nd_try-ms", "k"])
def test_names_at_the_edges_of_the_form_apply(transactional_db, tmp_path: Path, name: str) -> None:
    apply(tmp_path, name)
    assert Board.objects.get(slug="sprint").subscores[0]["name"] == name
