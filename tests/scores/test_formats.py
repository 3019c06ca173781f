"""Board score formats (docs/api.md §2.2): the TOML option, its validation, and how the
pages show a score while the API keeps answering integers."""

from __future__ import annotations

import pytest
from django.test import Client

from scores.config import ConfigError, parse_game_config
from scores.formats import score_format
from scores.models import Board
from scores.selectors import cached_board, config_cache_clear
from scores.services import game_config_apply
from tests.boards.conftest import submit

TOML = """
[game]
slug = "fmt"
name = "Formats"

[[boards]]
slug = "run"
name = "Run"
order = "asc"
min_score = 1
max_score = 3600000
{extra}
"""


@pytest.mark.parametrize(
    ("value", "fmt", "shown"),
    [
        (12345, "integer", "12,345"),
        (-7, "integer", "-7"),
        (281_897, "duration_ms", "4:41.897"),
        (5, "duration_ms", "0:00.005"),
        (3_723_004, "duration_ms", "1:02:03.004"),
        (123_456, "decimal:2", "1,234.56"),
        (-5, "decimal:3", "-0.005"),
        (7, "decimal:1", "0.7"),
    ],
)
def test_scores_read_as_their_format_says(value: int, fmt: str, shown: str) -> None:
    assert score_format(value, fmt) == shown


def test_the_format_option_is_checked_and_defaults_to_integer() -> None:
    assert parse_game_config(TOML.format(extra="")).boards[0].format == "integer"
    for good in ("integer", "duration_ms", "decimal:2"):
        assert parse_game_config(TOML.format(extra=f'format = "{good}"')).boards[0].format == good
    for bad in ('"decimal:0"', '"decimal:10"', '"seconds"', "3"):
        with pytest.raises(ConfigError) as err:
            parse_game_config(TOML.format(extra=f"format = {bad}"))
        assert err.value.key == "boards[0].format"


def test_apply_sets_the_board_format_and_readers_see_it(transactional_db) -> None:
    game_config_apply(parse_game_config(TOML.format(extra='format = "duration_ms"')))
    assert Board.objects.get(slug="run").format == "duration_ms"
    assert cached_board("fmt", board_slug="run").format == "duration_ms"
    changes = game_config_apply(parse_game_config(TOML.format(extra='format = "decimal:3"')))
    assert changes == ["updated board run: format"]
    assert game_config_apply(parse_game_config(TOML.format(extra='format = "decimal:3"'))) == []


def test_pages_format_and_the_api_answers_integers(server, game) -> None:
    Board.objects.filter(game=game, slug="rating").update(format="duration_ms")
    config_cache_clear()
    submit(server, "m1", [{"player": "ana", "board": "rating", "score": 281_897}])
    html = Client().get("/games/chess/boards/rating/").content.decode()
    assert ">4:41.897<" in html and 'data-format="duration_ms"' in html
    top = Client().get("/api/v1/games/chess/boards/rating/top").json()
    assert top["entries"][0]["score"] == 281_897
