"""What the board reads share: the serializers that document their bodies (OpenAPI), query
parsing, resolving a board and window, and the bodies' JSON."""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest, QueryDict
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request

from boards.cursor import CURSOR_RE
from boards.types import BoardEntry
from leaderboard_project.errors import RATE_LIMITED, ErrorBodySerializer, NotFound
from scores import windows
from scores.ids import SLUG_RE
from scores.selectors import BoardConfig, cached_board, cached_game


class EntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    player = serializers.CharField(source="external_id")
    display_name = serializers.CharField()
    score = serializers.IntegerField(source="value")
    metadata = serializers.JSONField(allow_null=True)
    subscores = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="only on boards that declare sub-scores: the value's sub-scores by name (docs/api.md §2.3)",
    )


_QUERY_INTEGER = re.compile(r"-?[0-9]+")


class QueryIntegerField(serializers.IntegerField):
    """An integer as a query string writes one: ASCII digits, perhaps a minus. DRF's own field
    would read "5.0", "+5", " 5", "1_0" and "٣" (an Arabic-Indic three) as numbers, which the
    schema's `type: integer` does not allow (docs/api.md §15)."""

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, str) or _QUERY_INTEGER.fullmatch(data) is None:
            self.fail("invalid")
        return super().to_internal_value(data)


# Query text is taken as sent, as ids are (docs/api.md §1.1): " all" is no window, not "all".


class TopQuerySerializer(serializers.Serializer):
    window = serializers.CharField(default="all", trim_whitespace=False)
    region = serializers.CharField(required=False, trim_whitespace=False)
    limit = QueryIntegerField(min_value=1, max_value=100, default=10)
    offset = QueryIntegerField(min_value=0, max_value=10_000, default=0)
    cursor = serializers.CharField(required=False, max_length=200, trim_whitespace=False)


class BoardWindowOutSerializer(serializers.Serializer):
    """What every body about one board window starts with (the window explicit, as resolved)."""

    game = serializers.CharField()
    board = serializers.CharField()
    window = serializers.CharField()


class TopOutSerializer(BoardWindowOutSerializer):
    total = serializers.IntegerField()
    entries = EntrySerializer(many=True)
    next_cursor = serializers.CharField(
        allow_null=True, help_text="top?cursor= continues after this page's last entry; null on the last page"
    )
    degraded = serializers.BooleanField(required=False)


class PlayerQuerySerializer(serializers.Serializer):
    window = serializers.CharField(default="all", trim_whitespace=False)
    region = serializers.CharField(required=False, trim_whitespace=False)
    around = QueryIntegerField(min_value=0, max_value=50, default=2)


class PlayerOutSerializer(BoardWindowOutSerializer):
    player = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    rank = serializers.IntegerField(allow_null=True)
    score = serializers.IntegerField(allow_null=True)
    total = serializers.IntegerField()
    percentile = serializers.FloatField(allow_null=True)
    metadata = serializers.JSONField(allow_null=True)
    subscores = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="only on boards that declare sub-scores, for a player with a value: their sub-scores by name",
    )
    around = EntrySerializer(many=True)
    rank_exact = serializers.BooleanField(
        help_text="false: `rank` is estimated from the window's histogram (a sharded board, beyond its "
        "exact_rank_limit); unsharded boards always answer true"
    )
    rank_error = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="only when rank_exact is false: |rank - true rank| <= rank_error",
    )
    degraded = serializers.BooleanField(required=False)


class WindowQuerySerializer(serializers.Serializer):
    window = serializers.CharField(default="all", trim_whitespace=False)
    region = serializers.CharField(required=False, trim_whitespace=False)


class FriendEntrySerializer(EntrySerializer):
    """An entry of the friends board: a board entry with two ranks (documents boards/api/players.py friends_body)."""

    rank = serializers.IntegerField(help_text="among the player and their friends")
    board_rank = serializers.IntegerField(help_text="on the whole board")


class FriendsOutSerializer(BoardWindowOutSerializer):
    player = serializers.CharField()
    entries = FriendEntrySerializer(many=True)
    rank_exact = serializers.BooleanField(help_text="always true: friends' ranks are counted exactly")
    degraded = serializers.BooleanField(required=False)


# The hot reads build their bodies as plain dicts: the output serializers below document the
# shape (OpenAPI) and cost more than the rest of a cached read to run. The API tests pin
# the bodies.


def entry_body(e: BoardEntry) -> dict[str, Any]:
    body = {
        "rank": e.rank,
        "player": e.external_id,
        "display_name": e.display_name,
        "score": e.value,
        "metadata": e.metadata,
    }
    if e.subscores is not None:
        body["subscores"] = e.subscores
    return body


def board_config(game: str, board: str) -> BoardConfig:
    found = cached_board(game, board_slug=board)
    if found is None:
        if cached_game(game)[0] is None:
            raise NotFound(f"unknown game {game!r}", code="unknown_game")
        raise NotFound(f"unknown board {board!r}", code="unknown_board")
    return found


def resolved_window(board: BoardConfig, spec: str, region: str | None = None) -> str:
    """The explicit window a query means; with ?region=, the region's board of it."""
    tz = board.reset_timezone
    if region:
        found = board.region(region)
        if found is None:
            raise NotFound(f"board {board.slug!r} has no region {region!r}", code="unknown_region")
        tz = found.timezone
    try:
        window = windows.resolve(spec, timezone.now(), tz, board.windows, board.seasons)
    except windows.UnknownWindow as exc:
        raise NotFound(str(exc), code="unknown_window") from None
    return windows.in_region(region, window) if region else window


_INT_PARAMS = {"limit": (1, 100), "offset": (0, 10_000), "around": (0, 50)}
# The serializers' defaults, for the parameters read directly (other serializers always validate)
QUERY_DEFAULTS: dict[type[serializers.Serializer], dict[str, Any]] = {
    TopQuerySerializer: {"window": "all", "limit": 10, "offset": 0},
    PlayerQuerySerializer: {"window": "all", "around": 2},
    WindowQuerySerializer: {"window": "all"},
}


def board_window(
    game: str, board: str, request: Request | HttpRequest, query: type[serializers.Serializer] = WindowQuerySerializer
) -> tuple[BoardConfig, dict[str, Any], str]:
    """The board a read names, its validated query, and the explicit window the query means."""
    cfg = board_config(game, board)
    q = parsed_query(query, request)
    return cfg, q, resolved_window(cfg, q["window"], q.get("region"))


def plain_query(serializer_class: type[serializers.Serializer], params: QueryDict) -> dict[str, Any] | None:
    """The query when every parameter is plain (what the serializer would validate to), read
    directly; None for anything unusual (a bad number, an empty or repeated parameter)."""
    defaults = QUERY_DEFAULTS.get(serializer_class)
    if defaults is None:
        return None
    out = dict(defaults)
    for name, values in params.lists():
        if name not in out and name not in ("region", "cursor"):
            continue  # ignored, as the serializer ignores unknown parameters
        if len(values) != 1 or not values[0] or values[0] != values[0].strip():
            return None
        value = values[0]
        if name in _INT_PARAMS:
            lo, hi = _INT_PARAMS[name]
            if not value.isascii() or not value.isdigit() or not lo <= int(value) <= hi:
                return None
            out[name] = int(value)
        else:
            out[name] = value
    return out


def parsed_query(serializer_class: type[serializers.Serializer], request: Request | HttpRequest) -> dict[str, Any]:
    """The validated query (of DRF's request or Django's). Plain parameters are read directly;
    anything unusual goes through the serializer, which words the 400."""
    params = getattr(request, "_request", request).GET
    out = plain_query(serializer_class, params)
    if out is not None:
        return out
    query = serializer_class(data=params)
    query.is_valid(raise_exception=True)
    return query.validated_data


class JsonOnly(BaseContentNegotiation):
    """These endpoints speak JSON only: answer it whatever the Accept header says, without
    DRF's parsing of that header on every read (a browser's Accept: text/html gets JSON too)."""

    def select_parser(self, request: Request, parsers: list) -> object | None:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None) -> tuple:
        return renderers[0], renderers[0].media_type


REGION_PARAM = OpenApiParameter(
    "region", {"type": "string", "pattern": SLUG_RE}, description="a region's board (boards with regions = true)"
)
WINDOW_PARAM = OpenApiParameter(
    "window",
    {"type": "string", "pattern": windows.WINDOW_RE, "default": "all"},
    description="all (default), daily, weekly, monthly, season, last7d, last30d, or explicit: daily:2026-11-29, weekly:2026-W48, monthly:2026-11, season:<slug>",
)
NOT_FOUND = OpenApiResponse(ErrorBodySerializer, description="unknown game, board, player or window")
BAD_QUERY = OpenApiResponse(ErrorBodySerializer, description="a parameter out of its range, or a malformed player id")
PUBLIC_READ_ERRORS = {400: BAD_QUERY, 404: NOT_FOUND, 429: RATE_LIMITED}
# reads about one player: signed, or a player token, or a signed-in user; throttled
PLAYER_READ_ERRORS = {
    **PUBLIC_READ_ERRORS,
    401: ErrorBodySerializer,
    403: ErrorBodySerializer,
    429: ErrorBodySerializer,
}


def _int_param(name: str, description: str) -> OpenApiParameter:
    """An integer query parameter with the bounds parsed_query() enforces (the schema states them)."""
    lo, hi = _INT_PARAMS[name]
    default = QUERY_DEFAULTS[TopQuerySerializer].get(name, QUERY_DEFAULTS[PlayerQuerySerializer].get(name))
    schema = {"type": "integer", "minimum": lo, "maximum": hi, "default": default}
    return OpenApiParameter(name, schema, description=f"{description} ({lo}-{hi}, default {default})")


LIMIT_PARAM = _int_param("limit", "entries per page")
OFFSET_PARAM = _int_param("offset", "entries skipped before the page")
CURSOR_PARAM = OpenApiParameter(
    "cursor",
    # exactly what cursor_decode takes, which is exactly what next_cursor hands out
    {"type": "string", "pattern": CURSOR_RE},
    description="a page's next_cursor: the entries after that page's last one, at any depth (instead of offset)",
)
AROUND_PARAM = _int_param("around", "neighbours on each side")
