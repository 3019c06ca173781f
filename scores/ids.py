"""The exact forms of the ids (docs/api.md §1.1). An id is taken as sent or
refused with 400: never trimmed or otherwise changed into another id.

The patterns keep their ^...$ spelling for the OpenAPI schema (ECMA-262 has no \\Z); in
Python, `$` also matches before a trailing newline, so checks here use fullmatch."""

from __future__ import annotations

import re

from leaderboard_project.errors import ApiError

SLUG_RE = r"^[a-z0-9][a-z0-9-]{0,63}$"
PLAYER_RE = r"^[A-Za-z0-9_.:@-]{1,64}$"
# a board's sub-score (docs/game-config.md): a slug that may also hold `_` (`time_ms`)
SUBSCORE_NAME_RE = r"^[a-z0-9][a-z0-9_-]{0,63}$"
# 1-128 printable ASCII characters, no leading or trailing space (spaces inside are fine)
MATCH_ID_RE = r"^[\x21-\x7e](?:[\x20-\x7e]{0,126}[\x21-\x7e])?$"

_SLUG = re.compile(SLUG_RE[1:-1])
_PLAYER = re.compile(PLAYER_RE[1:-1])
_SUBSCORE_NAME = re.compile(SUBSCORE_NAME_RE[1:-1])
_MATCH_ID = re.compile(MATCH_ID_RE[1:-1])


def is_slug(value: object) -> bool:
    return type(value) is str and _SLUG.fullmatch(value) is not None


def is_subscore_name(value: object) -> bool:
    return type(value) is str and _SUBSCORE_NAME.fullmatch(value) is not None


def is_player_id(value: object) -> bool:
    return type(value) is str and _PLAYER.fullmatch(value) is not None


def is_match_id(value: object) -> bool:
    return type(value) is str and _MATCH_ID.fullmatch(value) is not None


def player_id_check(value: str) -> str:
    """A player id from a URL, or 400 (invalid_player) naming what is wrong with it."""
    if not is_player_id(value):
        raise ApiError(f"{value!r} is not a player id: 1-64 characters of A-Z a-z 0-9 _ . : @ -", code="invalid_player")
    return value


def match_id_check(value: str) -> str:
    """A match id from a URL, or 400 (invalid_match_id)."""
    if not is_match_id(value):
        raise ApiError(
            f"{value!r} is not a match id: 1-128 printable ASCII characters, no leading or trailing space",
            code="invalid_match_id",
        )
    return value
