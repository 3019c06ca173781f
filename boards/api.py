"""Board reads (contract sections 5 and 6). Thin: resolve, authorize, call a selector, render."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.cache import cache
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from boards import histogram, selectors
from boards.redis import REDIS_DOWN
from boards.throttles import PlayerReadThrottle
from leaderboard_project.errors import ErrorBodySerializer, NotFound
from scores import windows
from scores.auth import PlayerPrincipal, PlayerTokenAuthentication, ServerKeyAuthentication
from scores.ids import player_id_check
from scores.models import ServerKey
from scores.selectors import BoardConfig, cached_board, cached_game

TOP_CACHE_SECONDS = 1.0


class EntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    player = serializers.CharField(source="external_id")
    display_name = serializers.CharField()
    score = serializers.IntegerField(source="value")
    metadata = serializers.JSONField(allow_null=True)


class TopQuerySerializer(serializers.Serializer):
    window = serializers.CharField(default="all")
    region = serializers.CharField(required=False)
    limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
    offset = serializers.IntegerField(min_value=0, max_value=10_000, default=0)


class TopOutSerializer(serializers.Serializer):
    game = serializers.CharField()
    board = serializers.CharField()
    window = serializers.CharField()
    total = serializers.IntegerField()
    entries = EntrySerializer(many=True)
    degraded = serializers.BooleanField(required=False)


class PlayerQuerySerializer(serializers.Serializer):
    window = serializers.CharField(default="all")
    region = serializers.CharField(required=False)
    around = serializers.IntegerField(min_value=0, max_value=50, default=2)


class PlayerOutSerializer(serializers.Serializer):
    game = serializers.CharField()
    board = serializers.CharField()
    window = serializers.CharField()
    player = serializers.CharField()
    display_name = serializers.CharField(allow_null=True)
    rank = serializers.IntegerField(allow_null=True)
    score = serializers.IntegerField(allow_null=True)
    total = serializers.IntegerField()
    percentile = serializers.FloatField(allow_null=True)
    metadata = serializers.JSONField(allow_null=True)
    around = EntrySerializer(many=True)
    degraded = serializers.BooleanField(required=False)


class WindowQuerySerializer(serializers.Serializer):
    window = serializers.CharField(default="all")
    region = serializers.CharField(required=False)


class FriendEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    board_rank = serializers.IntegerField()
    player = serializers.CharField(source="entry.external_id")
    display_name = serializers.CharField(source="entry.display_name")
    score = serializers.IntegerField(source="entry.value")
    metadata = serializers.JSONField(source="entry.metadata", allow_null=True)


class FriendsOutSerializer(serializers.Serializer):
    game = serializers.CharField()
    board = serializers.CharField()
    window = serializers.CharField()
    player = serializers.CharField()
    entries = FriendEntrySerializer(many=True)
    degraded = serializers.BooleanField(required=False)


# The hot reads build their bodies as plain dicts: the output serializers below document the
# shape (OpenAPI) and cost more than the rest of a cached read to run. The contract tests pin
# the bodies.


def _entry(e: selectors.Entry) -> dict[str, Any]:
    return {
        "rank": e.rank,
        "player": e.external_id,
        "display_name": e.display_name,
        "score": e.value,
        "metadata": e.metadata,
    }


def _friend_entry(f: selectors.FriendEntry) -> dict[str, Any]:
    e = f.entry
    return {
        "rank": f.rank,
        "board_rank": f.board_rank,
        "player": e.external_id,
        "display_name": e.display_name,
        "score": e.value,
        "metadata": e.metadata,
    }


def _board(game: str, board: str) -> BoardConfig:
    found = cached_board(game, board_slug=board)
    if found is None:
        if cached_game(game)[0] is None:
            raise NotFound(f"unknown game {game!r}", code="unknown_game")
        raise NotFound(f"unknown board {board!r}", code="unknown_board")
    return found


def _window(board: BoardConfig, spec: str, region: str | None = None) -> str:
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
_DEFAULTS: dict[type[serializers.Serializer], dict[str, Any]] = {
    TopQuerySerializer: {"window": "all", "limit": 10, "offset": 0},
    PlayerQuerySerializer: {"window": "all", "around": 2},
    WindowQuerySerializer: {"window": "all"},
}


def _query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The validated query. Plain parameters are read directly; anything unusual (a bad
    number, an empty or repeated parameter) goes through the serializer, which words the 400."""
    defaults = _DEFAULTS.get(serializer_class)
    params = request._request.GET
    out = dict(defaults or {})
    fast = defaults is not None
    for name, values in params.lists() if fast else ():
        if name not in out and name != "region":
            continue  # ignored, as the serializer ignores unknown parameters
        if len(values) != 1 or not values[0] or values[0] != values[0].strip():
            fast = False
            break
        value = values[0]
        if name in _INT_PARAMS:
            lo, hi = _INT_PARAMS[name]
            if not value.isascii() or not value.isdigit() or not lo <= int(value) <= hi:
                fast = False
                break
            out[name] = int(value)
        else:
            out[name] = value
    if fast:
        return out
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


class JsonOnly(BaseContentNegotiation):
    """These endpoints speak JSON only: answer it whatever the Accept header says, without
    DRF's parsing of that header on every read (a browser's Accept: text/html gets JSON too)."""

    def select_parser(self, request: Request, parsers: list) -> object | None:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None) -> tuple:
        return renderers[0], renderers[0].media_type


REGION_PARAM = OpenApiParameter("region", str, description="a region's board (boards with regions = true)")
WINDOW_PARAM = OpenApiParameter(
    "window",
    str,
    description="all (default), daily, weekly, monthly, season, last7d, last30d, or explicit: daily:2026-11-29, weekly:2026-W48, monthly:2026-11, season:<slug>",
)
NOT_FOUND = OpenApiResponse(ErrorBodySerializer, description="unknown game, board, player or window")
BAD_QUERY = OpenApiResponse(ErrorBodySerializer, description="a parameter out of its range, or a malformed player id")


def _int_param(name: str, description: str) -> OpenApiParameter:
    """An integer query parameter with the bounds _query() enforces (the schema states them)."""
    lo, hi = _INT_PARAMS[name]
    default = _DEFAULTS[TopQuerySerializer].get(name, _DEFAULTS[PlayerQuerySerializer].get(name))
    schema = {"type": "integer", "minimum": lo, "maximum": hi, "default": default}
    return OpenApiParameter(name, schema, description=f"{description} ({lo}-{hi}, default {default})")


LIMIT_PARAM = _int_param("limit", "entries per page")
OFFSET_PARAM = _int_param("offset", "entries skipped before the page")
AROUND_PARAM = _int_param("around", "neighbours on each side")


def _json(body: dict[str, Any]) -> bytes:
    """The body as DRF's JSONRenderer writes it (compact, UTF-8, U+2028/9 escaped)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


class TopApi(APIView):
    """Public. A computed page is reused for one second from when it was computed, from this
    process's memory or (for pages near the top) the shared cache, so identical reads cost
    Redis one query a second. Pages are kept as encoded JSON."""

    content_negotiation_class = JsonOnly
    _local: dict[str, tuple[float, bytes]] = {}
    _LOCAL_MAX = 1000  # pages kept in memory (at most ~20 kB each); the oldest go first
    SHARED_MAX_OFFSET = 1000  # deeper pages are rarely read twice in a second: not worth a SET

    @classmethod
    def _cached(cls, key: str, shared: bool) -> bytes | None:
        now = time.time()
        hit = cls._local.get(key)
        if hit is not None and now - hit[0] < TOP_CACHE_SECONDS:
            return hit[1]
        if shared:
            hit = cache.get(key)
            if hit is not None and now - hit[0] < TOP_CACHE_SECONDS:
                cls._keep(key, hit)
                return hit[1]
        return None

    @classmethod
    def _keep(cls, key: str, hit: tuple[float, bytes]) -> None:
        local = cls._local
        local.pop(key, None)
        while len(local) >= cls._LOCAL_MAX:
            del local[next(iter(local))]  # dicts keep insertion order: the oldest page
        local[key] = hit

    @classmethod
    def _remember(cls, key: str, body: bytes, shared: bool) -> None:
        hit = (time.time(), body)
        cls._keep(key, hit)
        if shared:
            cache.set(key, hit, TOP_CACHE_SECONDS)

    @extend_schema(
        operation_id="boards_top",
        parameters=[WINDOW_PARAM, REGION_PARAM, LIMIT_PARAM, OFFSET_PARAM],
        responses={200: TopOutSerializer, 400: BAD_QUERY, 404: NOT_FOUND},
        summary="The top of a board",
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        cfg = _board(game, board)
        q = _query(TopQuerySerializer, request)
        window = _window(cfg, q["window"], q.get("region"))
        key = f"top:{cfg.id}:{window}:{q['offset']}:{q['limit']}"
        shared = q["offset"] < self.SHARED_MAX_OFFSET
        content = self._cached(key, shared)
        if content is None:
            page = selectors.board_top(cfg, window, q["offset"], q["limit"])
            body = {
                "game": game,
                "board": board,
                "window": window,
                "total": page.total,
                "entries": [_entry(e) for e in page.entries],
            }
            if page.degraded:
                body["degraded"] = True
            content = _json(body)
            if not page.degraded:
                self._remember(key, content, shared)
        response = HttpResponse(content, content_type="application/json")
        response["Cache-Control"] = "public, max-age=1"
        return response


class PlayerReadApi(APIView):
    """Reads about one player: allowed for the game's server keys, staff, the player and
    the player's friends."""

    authentication_classes = [ServerKeyAuthentication, PlayerTokenAuthentication, SessionAuthentication]
    throttle_classes = [PlayerReadThrottle]
    content_negotiation_class = JsonOnly

    def player_pk(self, request: Request, cfg: BoardConfig, player: str) -> int:
        if request.user is None or not request.user.is_authenticated:
            raise exceptions.NotAuthenticated("sign the request, or send a player token (Authorization: Bearer ...)")
        pk = selectors.player_pk(cfg.game_id, player_id_check(player))
        if pk is None:
            raise NotFound(f"unknown player {player!r}", code="unknown_player")
        self.authorize(request, cfg.game_id, pk)
        return pk

    @staticmethod
    def authorize(request: Request, game_id: int, pk: int) -> None:
        user, auth = request.user, request.auth
        if isinstance(auth, ServerKey):
            if auth.game_id != game_id:
                raise exceptions.PermissionDenied("this key belongs to another game")
            return
        if isinstance(user, PlayerPrincipal):
            if user.game_id == game_id and (user.player_pk == pk or user.player_pk in selectors.friend_pks(pk)):
                return
            raise exceptions.PermissionDenied("players may read only themselves and their friends")
        if getattr(user, "is_staff", False):
            return
        raise exceptions.PermissionDenied("not allowed to read this player")


class PlayerStandingApi(PlayerReadApi):
    _prefetched: tuple[tuple[BoardConfig, str, int, int], list[Any]] | None = None

    def _own_read(self, request: Request) -> tuple[BoardConfig, str, int, int] | None:
        """(board, window, player, around) when a player token reads its own standing with
        plain parameters and everything is in this process's caches; None for anything else."""
        user = request.user
        if not isinstance(user, PlayerPrincipal):
            return None
        kw = self.kwargs
        cfg = cached_board(kw["game"], board_slug=kw["board"])
        if cfg is None or cfg.game_id != user.game_id:
            return None
        if selectors.player_pk_cached(cfg.game_id, kw["player"]) != user.player_pk:
            return None
        try:
            q = _query(PlayerQuerySerializer, request)
            window = _window(cfg, q["window"], q.get("region"))
        except exceptions.APIException:
            return None
        return cfg, window, user.player_pk, q["around"]

    def check_throttles(self, request: Request) -> None:
        """A player reading their own standing (the hot read) has its rate limits counted by
        the page script itself: one Redis round trip instead of two. The 429 still comes
        before anything the view would answer, and a refused request reads no board. Any
        other read is throttled on its own first, as DRF does."""
        throttles = self.get_throttles()
        plan = self._own_read(request) if len(throttles) == 1 else None
        throttle = throttles[0] if plan is not None else None
        if not isinstance(throttle, PlayerReadThrottle):
            return super().check_throttles(request)
        now = time.time()
        limits, counters, args = throttle.counters(request, now)
        if not limits:
            return None
        cfg, window, pk, around = plan
        try:
            reply = selectors.standing_reply(cfg, window, pk, around, counters, args)
        except REDIS_DOWN:
            return None  # let through, as the throttle does; the read degrades to Postgres
        if len(reply) == 1:
            throttle.verdict(limits, int(reply[0]), now)
            self.throttled(request, throttle.wait())
        self._prefetched = (plan, reply)
        return None

    @extend_schema(
        operation_id="boards_player",
        parameters=[WINDOW_PARAM, REGION_PARAM, AROUND_PARAM],
        responses={
            200: PlayerOutSerializer,
            400: BAD_QUERY,
            401: ErrorBodySerializer,
            403: ErrorBodySerializer,
            404: NOT_FOUND,
            429: ErrorBodySerializer,
        },
        summary="A player's exact rank, percentile and the players around them",
    )
    def get(self, request: Request, game: str, board: str, player: str) -> Response:
        if self._prefetched is not None:
            (cfg, window, pk, around), reply = self._prefetched
        else:
            cfg = _board(game, board)
            q = _query(PlayerQuerySerializer, request)
            window = _window(cfg, q["window"], q.get("region"))
            pk = self.player_pk(request, cfg, player)
            around, reply = q["around"], None
        standing = selectors.player_standing(cfg, window, pk, around, reply=reply)
        me = standing.me
        body = {
            "game": game,
            "board": board,
            "window": window,
            "player": player,
            "display_name": me.display_name if me else None,
            "rank": me.rank if me else None,
            "score": me.value if me else None,
            "total": standing.total,
            "percentile": standing.percentile,
            "metadata": me.metadata if me else None,
            "around": [_entry(e) for e in standing.around],
        }
        if standing.degraded:
            body["degraded"] = True
        return Response(body)


class FriendsBoardApi(PlayerReadApi):
    @extend_schema(
        operation_id="boards_friends",
        parameters=[WINDOW_PARAM, REGION_PARAM],
        responses={
            200: FriendsOutSerializer,
            400: BAD_QUERY,
            401: ErrorBodySerializer,
            403: ErrorBodySerializer,
            404: NOT_FOUND,
            429: ErrorBodySerializer,
        },
        summary="The player and their friends, ranked among themselves and on the whole board",
    )
    def get(self, request: Request, game: str, board: str, player: str) -> Response:
        cfg = _board(game, board)
        q = _query(WindowQuerySerializer, request)
        window = _window(cfg, q["window"], q.get("region"))
        pk = self.player_pk(request, cfg, player)
        friends = selectors.friends_board(cfg, window, pk)
        body = {
            "game": game,
            "board": board,
            "window": window,
            "player": player,
            "entries": [_friend_entry(f) for f in friends.entries],
        }
        if friends.degraded:
            body["degraded"] = True
        return Response(body)


class HistogramBucketSerializer(serializers.Serializer):
    min = serializers.IntegerField()
    max = serializers.IntegerField()
    count = serializers.IntegerField()


class HistogramOutSerializer(serializers.Serializer):
    game = serializers.CharField()
    board = serializers.CharField()
    window = serializers.CharField()
    total = serializers.IntegerField()
    refreshed_at = serializers.DateTimeField(allow_null=True)
    buckets = HistogramBucketSerializer(many=True)
    degraded = serializers.BooleanField(required=False)


HISTOGRAM_MAX_AGE = 60


class HistogramApi(APIView):
    """Public. The score distribution, refreshed on a schedule (boards/histogram.py); a
    window not refreshed yet is computed once on the first read."""

    @extend_schema(
        operation_id="boards_histogram",
        parameters=[WINDOW_PARAM, REGION_PARAM],
        responses={200: HistogramOutSerializer, 400: ErrorBodySerializer, 404: NOT_FOUND},
        summary="How many players stand in each score bucket (lowest value first); may be minutes old",
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        cfg = _board(game, board)
        q = _query(WindowQuerySerializer, request)
        window = _window(cfg, q["window"], q.get("region"))
        found = histogram.histogram_read(cfg, window)
        body = HistogramOutSerializer(
            {
                "game": game,
                "board": board,
                "window": window,
                "total": found.total,
                "refreshed_at": found.refreshed_at,
                "buckets": found.buckets,
            }
        ).data
        if found.degraded:
            body["degraded"] = True
        response = Response(body)
        response["Cache-Control"] = f"public, max-age={1 if found.degraded else HISTOGRAM_MAX_AGE}"
        return response
