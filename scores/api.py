"""Game-server endpoints for results (contract section 4). Thin: parse, call a service, render."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard_project.errors import (
    ApiError,
    ErrorBodySerializer,
    ErrorSerializer,
    NotFound,
    error_body,
    flatten_detail,
)
from scores import ids, ingest, selectors, services
from scores.auth import ServerKeyAuthentication, server_key_permission
from scores.ids import MATCH_ID_RE, PLAYER_RE, SLUG_RE, player_id_check
from scores.models import Player
from scores.selectors import cached_game

MAX_METADATA_BYTES = 1024
MAX_BATCH = 1000


class StrictIntegerField(serializers.IntegerField):
    """JSON integers only: "12", 12.0 and true are not scores."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class ExactIdField(serializers.RegexField):
    """An id taken exactly as sent (contract section 12): no trimming, and the whole value
    must match (Python's `$` alone would let a trailing newline through)."""

    def __init__(self, regex: str, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        # (DRF formats the message: braces in the pattern are doubled)
        form = regex.replace("{", "{{").replace("}", "}}")
        kwargs.setdefault("error_messages", {"invalid": f"must be exactly of the form {form}, with nothing around it"})
        super().__init__(regex, **kwargs)
        self._exact = re.compile(regex[1:-1] if regex.startswith("^") and regex.endswith("$") else regex)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if self._exact.fullmatch(value) is None:
            self.fail("invalid")
        return value


# ended_at outside these years is refused as a date-time (year 1 or 9999 shifted by an offset
# leaves the range datetime can hold; no real match ended before 1970)
ENDED_AT_MIN = datetime(1970, 1, 1, tzinfo=UTC)
ENDED_AT_MAX = datetime(9999, 1, 1, tzinfo=UTC)


@extend_schema_field(OpenApiTypes.DATETIME)
class Rfc3339Field(serializers.Field):
    default_error_messages = {
        "invalid": "must be an RFC 3339 date-time with an offset, e.g. 2026-11-29T18:59:58Z",
        "range": "must be between 1970-01-01T00:00:00Z and 9999-01-01T00:00:00Z",
    }

    def to_internal_value(self, data: Any) -> datetime:
        if not isinstance(data, str) or "T" not in data.upper():
            self.fail("invalid")
        try:
            value = datetime.fromisoformat(data)
        except ValueError:
            self.fail("invalid")
        if value.tzinfo is None:
            self.fail("invalid")
        try:
            in_utc = value.astimezone(UTC)
        except OverflowError:
            self.fail("range")
        if not ENDED_AT_MIN <= in_utc < ENDED_AT_MAX:
            self.fail("range")
        return value

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


class MetadataField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object")
        if len(json.dumps(data, separators=(",", ":")).encode()) > MAX_METADATA_BYTES:
            raise serializers.ValidationError(f"must be at most {MAX_METADATA_BYTES} bytes of JSON")
        return data


class ResultInSerializer(serializers.Serializer):
    player = ExactIdField(PLAYER_RE, max_length=64)
    board = ExactIdField(SLUG_RE, max_length=64)
    score = StrictIntegerField()
    display_name = serializers.CharField(min_length=1, max_length=64, required=False)
    metadata = MetadataField(required=False)
    region = ExactIdField(SLUG_RE, max_length=64, required=False, help_text="The player's region (fixed for a season).")


class MatchInSerializer(serializers.Serializer):
    match_id = ExactIdField(MATCH_ID_RE, max_length=128)
    ended_at = Rfc3339Field()
    results = ResultInSerializer(many=True, min_length=1, max_length=100)

    def to_match(self) -> ingest.MatchIn:
        return _to_match(self.validated_data)


def _to_match(data: dict[str, Any]) -> ingest.MatchIn:
    return ingest.MatchIn(
        match_id=data["match_id"],
        ended_at=data["ended_at"],
        results=tuple(ingest.ResultIn(**r) for r in data["results"]),
    )


# --- the fast path -------------------------------------------------------------------------
# DRF validated a 1000-match batch field by field in ~60 ms. The plain check below accepts
# exactly the matches that are valid *as sent* (no whitespace DRF would trim, no string DRF
# would coerce to a number) and builds the same MatchIn; anything else, valid or not, goes to
# the serializers above, which decide and word the error as before. So the fast path can only
# say "yes, and here it is" for bodies DRF would accept unchanged (tests/scores/test_fast_input.py).

_UNSAFE_TEXT = re.compile("[\x00\ud800-\udfff]")  # what DRF's CharField validators refuse
_RESULT_KEYS = frozenset({"player", "board", "score", "display_name", "metadata", "region"})
_SCORE_LIMIT = 10**18  # DRF refuses integers of more than 1000 digits; leave such oddities to it
_rfc3339 = Rfc3339Field()


def _fast_result(raw: Any) -> ingest.ResultIn | None:
    if type(raw) is not dict:
        return None
    player, board, score = raw.get("player"), raw.get("board"), raw.get("score")
    if not (ids.is_player_id(player) and ids.is_slug(board)):
        return None
    if type(score) is not int or not -_SCORE_LIMIT < score < _SCORE_LIMIT:
        return None
    if len(raw) == 3:
        return ingest.ResultIn(player, board, score)
    if not raw.keys() <= _RESULT_KEYS:
        return None  # DRF ignores unknown keys; so would we, but such bodies are rare: let it decide
    display_name = raw.get("display_name")
    if "display_name" in raw and not (
        type(display_name) is str
        and 1 <= len(display_name) <= 64
        and display_name == display_name.strip()
        and not _UNSAFE_TEXT.search(display_name)
    ):
        return None
    metadata = raw.get("metadata")
    if "metadata" in raw and not (
        type(metadata) is dict and len(json.dumps(metadata, separators=(",", ":")).encode()) <= MAX_METADATA_BYTES
    ):
        return None
    region = raw.get("region")
    if "region" in raw and not ids.is_slug(region):
        return None
    return ingest.ResultIn(player, board, score, display_name, metadata, region)


def _fast_match(raw: Any) -> ingest.MatchIn | None:
    """The match if it is plainly valid as sent, else None (then DRF decides)."""
    if type(raw) is not dict:
        return None
    match_id, ended_at, results = raw.get("match_id"), raw.get("ended_at"), raw.get("results")
    if not ids.is_match_id(match_id):
        return None
    if type(ended_at) is not str or type(results) is not list or not 1 <= len(results) <= 100:
        return None
    try:
        when = _rfc3339.to_internal_value(ended_at)
    except serializers.ValidationError:
        return None
    parsed = []
    for r in results:
        result = _fast_result(r)
        if result is None:
            return None
        parsed.append(result)
    return ingest.MatchIn(match_id=match_id, ended_at=when, results=tuple(parsed))


def _match_in(raw: Any, serializer: MatchInSerializer) -> ingest.MatchIn:
    """Raises serializers.ValidationError as DRF words it."""
    match = _fast_match(raw)
    if match is None:
        match = _to_match(serializer.run_validation(raw))
    return match


class BatchInSerializer(serializers.Serializer):
    matches = serializers.ListField(child=serializers.JSONField(), min_length=1, max_length=MAX_BATCH)


class MatchOutSerializer(serializers.Serializer):
    match_id = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["accepted", "held", "voided"], help_text="voided: a repeat of a match a moderator voided"
    )
    duplicate = serializers.BooleanField()
    missed_windows = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Windows whose standings were already frozen: the match counts in the others only.",
    )


class BatchItemOutSerializer(serializers.Serializer):
    match_id = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=["accepted", "held", "voided", "rejected"])
    duplicate = serializers.BooleanField()
    error = ErrorSerializer(required=False)
    missed_windows = serializers.ListField(child=serializers.CharField(), required=False)


class BatchOutSerializer(serializers.Serializer):
    results = BatchItemOutSerializer(many=True)


ERRORS = {
    400: OpenApiResponse(ErrorBodySerializer, description="invalid body; nothing stored"),
    401: OpenApiResponse(ErrorBodySerializer, description="missing, malformed or wrong signature"),
    403: OpenApiResponse(ErrorBodySerializer, description="key of another game, revoked, or without scope"),
    413: OpenApiResponse(ErrorBodySerializer, description="body too large"),
}


class ServerApiView(APIView):
    authentication_classes = [ServerKeyAuthentication]
    permission_classes = [server_key_permission("submit")]

    def game(self) -> Any:
        game = cached_game(self.kwargs["game"])[0]
        if game is None:
            raise NotFound(f"unknown game {self.kwargs['game']!r}")
        return game


class MatchSubmitApi(ServerApiView):
    @extend_schema(
        operation_id="matches_submit",
        request=MatchInSerializer,
        responses={201: MatchOutSerializer, 200: MatchOutSerializer, 409: ErrorBodySerializer, **ERRORS},
        summary="Submit one match's results (idempotent by match_id)",
    )
    def post(self, request: Request, game: str) -> Response:
        match = _fast_match(request.data)
        if match is None:
            serializer = MatchInSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            match = serializer.to_match()
        outcome = ingest.match_submit(game=self.game(), server_key=request.auth, match=match)
        # the same keys, in the same order, as MatchOutSerializer (the documented schema) renders
        body = _item(outcome.match_id, outcome.status, outcome.duplicate, None, outcome.missed_windows)
        return Response(body, status=status.HTTP_200_OK if outcome.duplicate else status.HTTP_201_CREATED)


class MatchBatchApi(ServerApiView):
    @extend_schema(
        operation_id="matches_submit_batch",
        request=BatchInSerializer,
        responses={200: BatchOutSerializer, **ERRORS},
        summary="Submit up to 1000 matches; each stands alone",
    )
    def post(self, request: Request, game: str) -> Response:
        raw_matches = request.data.get("matches") if type(request.data) is dict else None
        if type(raw_matches) is not list or not 1 <= len(raw_matches) <= MAX_BATCH:
            batch = BatchInSerializer(data=request.data)
            batch.is_valid(raise_exception=True)
            raw_matches = batch.validated_data["matches"]
        game_obj = self.game()
        items: list[dict[str, Any] | None] = []
        valid: list[ingest.MatchIn] = []
        # One serializer for the whole batch: building one per match costs more than validating it.
        serializer = MatchInSerializer()
        for raw in raw_matches:
            try:
                match = _match_in(raw, serializer)
            except serializers.ValidationError as exc:
                match_id = raw.get("match_id") if isinstance(raw, dict) else None
                err = ApiError(flatten_detail(exc.detail), code="invalid_body")
                items.append(_item(match_id if isinstance(match_id, str) else None, "rejected", error=err))
                continue
            items.append(None)
            valid.append(match)
        outcomes = iter(ingest.matches_submit(game=game_obj, server_key=request.auth, matches=valid))
        results = []
        for item in items:
            if item is None:
                o = next(outcomes)
                item = _item(o.match_id, o.status, o.duplicate, o.error, o.missed_windows)
            results.append(item)
        return Response({"results": results})  # the shape of BatchOutSerializer, built directly


def _item(
    match_id: str | None,
    status_: str,
    duplicate: bool = False,
    error: ApiError | None = None,
    missed_windows: list[str] | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {"match_id": match_id, "status": status_, "duplicate": duplicate}
    if error is not None:
        item["error"] = error_body(error.code, error.message)["error"]
    if missed_windows:
        item["missed_windows"] = missed_windows
    return item


# --- players: tokens and friends (contract sections 5 and 7) ---------------------------------


class TokenOutSerializer(serializers.Serializer):
    token = serializers.CharField()
    expires_at = serializers.DateTimeField()


class FriendListInSerializer(serializers.Serializer):
    friends = serializers.ListField(child=ExactIdField(PLAYER_RE, max_length=64), max_length=services.MAX_FRIENDS)


class FriendListOutSerializer(serializers.Serializer):
    friends = serializers.ListField(child=serializers.CharField())


class PlayerTokenApi(ServerApiView):
    @extend_schema(
        operation_id="players_token",
        request=None,
        responses={200: TokenOutSerializer, 404: ErrorBodySerializer, **ERRORS},
        summary="A bearer token with which the game client reads as this player",
    )
    def post(self, request: Request, game: str, player: str) -> Response:
        found = Player.objects.filter(game=self.game(), external_id=player_id_check(player)).first()
        if found is None:
            raise NotFound(f"unknown player {player!r}", code="unknown_player")
        token, expires_at = services.player_token_issue(player=found)
        return Response(TokenOutSerializer({"token": token, "expires_at": expires_at}).data)


class LoginLinkOutSerializer(serializers.Serializer):
    url = serializers.URLField()
    expires_at = serializers.DateTimeField()


class PlayerLoginLinkApi(ServerApiView):
    """An extension of the contract (docs/players.md): a one-time link that signs the player
    in to the web pages, made by the game's server and handed to the player."""

    @extend_schema(
        operation_id="players_login_link",
        request=None,
        responses={200: LoginLinkOutSerializer, 404: ErrorBodySerializer, **ERRORS},
        summary="A one-time link that signs this player in to the leaderboard web pages",
    )
    def post(self, request: Request, game: str, player: str) -> Response:
        from django.urls import reverse

        from scores import accounts

        found = Player.objects.filter(game=self.game(), external_id=player_id_check(player)).first()
        if found is None:
            raise NotFound(f"unknown player {player!r}", code="unknown_player")
        link = accounts.login_link_create(player=found)
        url = request.build_absolute_uri(reverse("login-link", args=[link.token]))
        return Response(LoginLinkOutSerializer({"url": url, "expires_at": link.expires_at}).data)


class FriendsApi(ServerApiView):
    @extend_schema(
        operation_id="players_friends_replace",
        request=FriendListInSerializer,
        responses={200: FriendListOutSerializer, **ERRORS},
        summary="Replace a player's friend list (mutual, at most 1000)",
    )
    def put(self, request: Request, game: str, player: str) -> Response:
        player_id_check(player)
        body = FriendListInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        friends = services.friends_replace(game=self.game(), player_id=player, friends=body.validated_data["friends"])
        return Response(FriendListOutSerializer({"friends": friends}).data)


# --- game description (contract section 12): public --------------------------------------------

GAME_CACHE_SECONDS = 60  # configuration changes by apply_game_config, rarely


class GameSummarySerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class GamesOutSerializer(serializers.Serializer):
    games = GameSummarySerializer(many=True)


class BoardDescriptionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    order = serializers.ChoiceField(choices=["desc", "asc"])
    mode = serializers.ChoiceField(choices=["best", "total"])
    windows = serializers.ListField(child=serializers.CharField())
    min_score = serializers.IntegerField()
    max_score = serializers.IntegerField()
    rank_display = serializers.ChoiceField(choices=["unique", "shared"])
    format = serializers.SerializerMethodField(help_text='how pages show scores: "integer" (the only format so far)')
    regions = serializers.BooleanField(help_text="the board also keeps one board per region of the game")

    def get_format(self, board: object) -> str:
        # Boards have no score format yet (contract section 12 adds the TOML key); every board
        # shows integers until it lands.
        return getattr(board, "format", "integer")


class SeasonDescriptionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()


class RegionDescriptionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    timezone = serializers.CharField()


class GameOutSerializer(serializers.Serializer):
    slug = serializers.CharField(source="game.slug")
    name = serializers.CharField(source="game.name")
    reset_timezone = serializers.CharField(source="game.reset_timezone")
    boards = BoardDescriptionSerializer(many=True)
    seasons = SeasonDescriptionSerializer(many=True)
    regions = RegionDescriptionSerializer(many=True)


def _cacheable(response: Response) -> Response:
    response["Cache-Control"] = f"public, max-age={GAME_CACHE_SECONDS}"
    return response


class GamesApi(APIView):
    @extend_schema(operation_id="games_list", responses={200: GamesOutSerializer}, summary="The games served here")
    def get(self, request: Request) -> Response:
        return _cacheable(Response(GamesOutSerializer({"games": selectors.games_list()}).data))


class GameApi(APIView):
    @extend_schema(
        operation_id="games_describe",
        responses={200: GameOutSerializer, 404: ErrorBodySerializer},
        summary="A game's boards (order, mode, windows, bounds, rank display), seasons and regions",
    )
    def get(self, request: Request, game: str) -> Response:
        found = selectors.game_describe(slug=game)
        if found is None:
            raise NotFound(f"unknown game {game!r}", code="unknown_game")
        return _cacheable(Response(GameOutSerializer(found).data))
