"""Anti-cheat thresholds: the defaults, and a board's overrides from its configuration
(`[[boards]] anticheat = {...}` in the game's TOML). Pure Python: scores/config.py parses with it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of every rule. 0 turns a rule off. docs/moderation.md explains each."""

    # reject: a player's gain from one match on a total board (sum of their results in it)
    max_gain: int = 0
    # reject: matches per player per minute (across the game; the smallest limit of the match's boards)
    max_matches_per_minute: int = 60
    # hold: value part above history_factor x the player's all-time value part on the board,
    # and at least history_min_gap above it (so a first small step up is never held)
    history_factor: float = 5.0
    history_min_gap: int = 10
    # hold: value part above the board's recent top_percentile by top_margin_percent,
    # once the board has top_min_sample recent results (statistics refreshed by beat)
    top_percentile: float = 99.0
    top_margin_percent: float = 50.0
    top_min_sample: int = 100
    # hold: results from a server whose recent mean is server_zscore standard deviations
    # above the other servers' (each with server_min_results recent results, at least 3 servers)
    server_zscore: float = 3.0
    server_min_results: int = 50
    # async, after the fact: hold when a result's value part is async_history_factor x the
    # median of the player's last 20 results on the board (with at least async_history_min_results)
    async_history_factor: float = 4.0
    async_history_min_results: int = 5


DEFAULTS = Thresholds()
_FIELDS = {f.name: f.type for f in dataclasses.fields(Thresholds)}


def thresholds_parse(raw: Any) -> dict[str, int | float]:
    """Check a board's `anticheat` table; return the overrides. Raises KeyError/ValueError
    with (key, message) so the config parser can name the offending key."""
    if not isinstance(raw, dict):
        raise ValueError("", "a table of thresholds, e.g. anticheat = { max_gain = 500 }")
    out: dict[str, int | float] = {}
    for key, value in raw.items():
        kind = _FIELDS.get(key)
        if kind is None:
            raise ValueError(key, f"unknown threshold (expected one of: {', '.join(sorted(_FIELDS))})")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(key, "a number is required (0 turns the rule off)")
        if kind == "int" and not isinstance(value, int):
            raise ValueError(key, "an integer is required")
        if value < 0:
            raise ValueError(key, "must be at least 0")
        if key == "top_percentile" and not 0 < value < 100:
            raise ValueError(key, "a percentile strictly between 0 and 100")
        out[key] = value
    return out


def thresholds_for(overrides: dict[str, Any] | None) -> Thresholds:
    return dataclasses.replace(DEFAULTS, **(overrides or {}))
