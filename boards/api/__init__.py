"""Board reads (docs/api.md §5, §6). Thin: resolve, authorize, call a selector, render.

common (serializers, query parsing, board and window), top, players (a player's standing,
friends), histogram."""

from boards.api.common import (
    QUERY_DEFAULTS,
    BoardWindowOutSerializer,
    EntrySerializer,
    ErrorBodySerializer,
    WindowQuerySerializer,
    board_config,
    board_window,
    entry_body,
    parsed_query,
    resolved_window,
)
from boards.api.histogram import HistogramApi
from boards.api.players import FriendsBoardApi, PlayerReadApi, PlayerStandingApi
from boards.api.top import TopApi

__all__ = [
    "BoardWindowOutSerializer",
    "EntrySerializer",
    "ErrorBodySerializer",
    "FriendsBoardApi",
    "HistogramApi",
    "PlayerReadApi",
    "PlayerStandingApi",
    "TopApi",
    "WindowQuerySerializer",
    "entry_body",
    "QUERY_DEFAULTS",
    "board_config",
    "board_window",
    "parsed_query",
    "resolved_window",
]
