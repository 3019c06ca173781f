"""Board reads (contract sections 5 and 6). Thin: resolve, authorize, call a selector, render.

common (serializers, query parsing, board and window), top, players (a player's standing,
friends), histogram."""

from boards.api.common import (
    _DEFAULTS,
    EntrySerializer,
    ErrorBodySerializer,
    _board,
    _query,
    _window,
)
from boards.api.histogram import HistogramApi
from boards.api.players import FriendsBoardApi, PlayerReadApi, PlayerStandingApi
from boards.api.top import TopApi

__all__ = [
    "EntrySerializer",
    "ErrorBodySerializer",
    "FriendsBoardApi",
    "HistogramApi",
    "PlayerReadApi",
    "PlayerStandingApi",
    "TopApi",
    "_DEFAULTS",
    "_board",
    "_query",
    "_window",
]
