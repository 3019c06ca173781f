"""docs/game-config.md names exactly the keys the TOML parser knows, section by section, and its
defaults are the parser's: the reference cannot drift from the code."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from django.conf import settings

from anticheat.thresholds import DEFAULTS, Thresholds
from competitions import leagues, tournaments
from scores import config

DOC = Path(settings.BASE_DIR) / "docs" / "game-config.md"


def _sections() -> dict[str, dict[str, str]]:
    """{heading: {key: default column}} from the doc's tables."""
    out: dict[str, dict[str, str]] = {}
    heading = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("#"):
            heading = line.lstrip("# ").split(" ")[0]
            continue
        row = re.match(r"^\| `([a-z_]+)` \| ([^|]*) \| ([^|]*) \|", line)
        if row:
            out.setdefault(heading, {})[row.group(1)] = row.group(3).strip()
    return out


def test_every_key_of_every_table_is_documented() -> None:
    doc = _sections()
    assert set(doc["`[game]`"]) == config._GAME_KEYS
    assert set(doc["`[[boards]]`"]) == config._BOARD_KEYS
    assert set(doc["`[[regions]]`"]) == config._REGION_KEYS
    assert set(doc["`[[seasons]]`"]) == config._SEASON_KEYS
    assert set(doc["`anticheat"]) == {f.name for f in dataclasses.fields(Thresholds)}
    assert set(doc["`[boards.tournament]`"]) == tournaments._KEYS
    assert set(doc["`[[webhooks]]`"]) == {"url", "events"}
    assert set(doc["`[boards.league]`"]) == leagues._KEYS


def test_the_documented_defaults_are_the_parsers() -> None:
    doc = _sections()
    spec = config.parse_game_config(
        '[game]\nslug = "g"\nname = "G"\n[[boards]]\nslug = "b"\nname = "B"\nmax_score = 9\n'
    )
    board = spec.boards[0]
    assert doc["`[game]`"]["reset_timezone"] == f'`"{spec.reset_timezone}"`'
    assert doc["`[game]`"]["close_grace_seconds"] == f"`{spec.close_grace_seconds}`"
    assert doc["`[game]`"]["retention_periods"] == f"`{spec.retention_periods}`"
    for key in ("order", "mode", "rank_display"):
        assert doc["`[[boards]]`"][key] == f'`"{getattr(board, key)}"`'
    assert doc["`[[boards]]`"]["windows"] == '`["all"]`' and board.windows == ("all",)
    assert doc["`[[boards]]`"]["min_score"] == f"`{board.min_score}`"
    for name, documented in doc["`anticheat"].items():
        assert documented.split(" ")[0].strip("`") == str(getattr(DEFAULTS, name)), name
