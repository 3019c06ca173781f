"""Reads of the durable store that other modules need, by concern:

- `config`: games and boards as readers see them (cached in-process), game descriptions;
- `players`: players, their signed-in users, friends and profiles;
- `values`: board windows' values in the contract's order (Postgres fallback reads, exports,
  held matches touching a season's top).

Callers import from `scores.selectors`; the names below are its public surface."""

from scores.selectors.config import (
    BoardConfig,
    GameConfig,
    GameDescription,
    RegionConfig,
    cached_board,
    cached_game,
    cached_game_config,
    cached_game_config_of_board,
    config_cache_clear,
    game_config,
    game_describe,
    game_get,
    games_list,
    season_spans,
    window_expiry,
)
from scores.selectors.players import Profile, friend_pks, json_value, player_of_user, player_pk, profiles
from scores.selectors.values import (
    ORDER_SQL,
    DurableSlice,
    durable_position,
    durable_range,
    durable_standings,
    held_touching_top,
    rank_sql,
    window_rows,
)

__all__ = [
    "ORDER_SQL",
    "BoardConfig",
    "DurableSlice",
    "GameConfig",
    "GameDescription",
    "Profile",
    "RegionConfig",
    "cached_board",
    "cached_game",
    "cached_game_config",
    "cached_game_config_of_board",
    "config_cache_clear",
    "durable_position",
    "durable_range",
    "durable_standings",
    "friend_pks",
    "game_config",
    "game_describe",
    "game_get",
    "games_list",
    "held_touching_top",
    "json_value",
    "player_of_user",
    "player_pk",
    "profiles",
    "rank_sql",
    "season_spans",
    "window_expiry",
    "window_rows",
]
