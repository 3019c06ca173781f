"""Submitting results (docs/api.md §4): one match, or a batch of up to 1000. Thin: parse
(a plain fast path, else DRF's serializers), call scores.ingest, render."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard_project.errors import (
    ApiError,
    ErrorBodySerializer,
    ErrorSerializer,
    error_body,
    flatten_detail,
)
from leaderboard_project.parsers import MAX_JSON_DEPTH, json_depth_exceeds
from scores import ids, ingest
from scores.api.common import SUBMIT_ERRORS, ExactIdField, ServerApiView, TextField
from scores.auth import ServerKeyAuthentication
from scores.ids import MATCH_ID_RE, PLAYER_RE, SLUG_RE
from scores.models import ServerKey

MAX_METADATA_BYTES = 1024
MAX_BATCH = 1000


class StrictIntegerField(serializers.IntegerField):
    """JSON integers only: "12", 12.0 and true are not scores."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


# ended_at outside these years is refused as a date-time (year 1 or 9999 shifted by an offset
# leaves the range datetime can hold; no real match ended before 1970)
ENDED_AT_MIN = datetime(1970, 1, 1, tzinfo=UTC)
ENDED_AT_MAX = datetime(9999, 1, 1, tzinfo=UTC)


# ENDED_AT_MIN <= ended_at < ENDED_AT_MAX for the schema: the years between, and the two edge
# years but their edge day (there, the offset decides; the schema keeps to the safe side)
_YEARS = r"(?:197[1-9]|19[89][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-7])-[0-9]{2}-[0-9]{2}"
_EDGE_YEARS = r"1970-(?:01-(?:0[2-9]|[12][0-9]|3[01])|(?:0[2-9]|1[0-2])-[0-9]{2})|9998-(?:(?:0[1-9]|1[01])-[0-9]{2}|12-(?:[0-2][0-9]|30))"
_TIME = r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
ENDED_AT_RE = rf"^(?:{_YEARS}|{_EDGE_YEARS}){_TIME}$"


@extend_schema_field({"type": "string", "format": "date-time", "pattern": ENDED_AT_RE})
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
        # the instant, in UTC: RFC 3339 offsets go to ±23:59, Postgres' to ±15:59 (it refused
        # "-22:02" as a 500); the offset means nothing once the instant is known
        return in_utc

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": True,
        "description": f"at most {MAX_METADATA_BYTES} bytes of compact JSON",
    }
)
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
    display_name = TextField(min_length=1, max_length=64, required=False)
    metadata = MetadataField(required=False)
    region = ExactIdField(SLUG_RE, max_length=64, required=False, help_text="The player's region (fixed for a season).")
    subscores = serializers.DictField(
        child=StrictIntegerField(),
        required=False,
        help_text="The board's declared sub-scores by name (docs/api.md §2.3); a missing one counts as its worst value.",
    )


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
_RESULT_KEYS = frozenset({"player", "board", "score", "display_name", "metadata", "region", "subscores"})
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
    subscores = raw.get("subscores")
    if "subscores" in raw and not (
        type(subscores) is dict
        and all(
            ids.is_subscore_name(k) and type(v) is int and -_SCORE_LIMIT < v < _SCORE_LIMIT
            for k, v in subscores.items()
        )
    ):
        return None
    return ingest.ResultIn(player, board, score, display_name, metadata, region, subscores)


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


# --- the thin request ------------------------------------------------------------------------
# A single submission that is plainly valid, signed by a key of the game with the submit scope,
# and sent as JSON is answered without DRF's request, parser, negotiation and renderer: orjson
# decodes the body, the plain check above builds the match, orjson encodes the answer (about a
# third of the web tier's CPU per single submission went to that machinery, docs/BENCHMARKS.md).
# Anything else (a body orjson refuses or the plain check cannot vouch for, a failed signature, a
# revoked key, another Content-Type or Accept) goes the DRF way, which decides and words the
# answer as before; the thin path has no side effect before it commits to answering, so handing
# over is always safe. tests/scores/test_thin_request.py holds the two paths' answers equal.

_THIN_CONTENT_TYPES = frozenset(
    {"application/json", "application/json; charset=utf-8", "application/json;charset=utf-8"}
)
_THIN_ACCEPTS = frozenset({"", "*/*", "application/json"})
_ALLOW = "POST, OPTIONS"  # what DRF's APIView answers in Allow for this view
_authentication = ServerKeyAuthentication()


def _json_response(body: dict[str, Any], status_code: int, retry_after: int | None = None) -> HttpResponse:
    response = HttpResponse(orjson.dumps(body), content_type="application/json", status=status_code)
    response.data = body  # what monitoring.metrics reads from DRF's Response, too
    response["Allow"] = _ALLOW
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def _thin_match(request: HttpRequest, game: str) -> tuple[ServerKey, ingest.MatchIn] | None:
    """The key and the match when the thin path may answer, else None (DRF's path then)."""
    meta = request.META
    if (
        request.method != "POST"
        or meta.get("CONTENT_TYPE", "").lower() not in _THIN_CONTENT_TYPES
        or meta.get("HTTP_ACCEPT", "") not in _THIN_ACCEPTS
    ):
        return None
    try:
        authenticated = _authentication.authenticate(request)  # type: ignore[arg-type]
    except APIException:
        return None
    if authenticated is None:
        return None
    key = authenticated[1]
    if key.game.slug != game or "submit" not in key.scopes:
        return None
    try:
        raw = orjson.loads(request.body)
    except orjson.JSONDecodeError:
        return None
    if type(raw) is not dict or json_depth_exceeds(raw, MAX_JSON_DEPTH):
        return None
    match = _fast_match(raw)
    return None if match is None else (key, match)


class MatchSubmitApi(ServerApiView):
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        thin = _thin_match(request, kwargs.get("game", ""))
        if thin is None:
            return super().dispatch(request, *args, **kwargs)
        key, match = thin
        self.args, self.kwargs = args, kwargs
        try:
            outcome = ingest.match_submit_gathered(game=self.game(), server_key=key, match=match)
        except ApiError as exc:
            return _json_response(error_body(exc.code, exc.message), exc.status_code, getattr(exc, "wait", None))
        body = _item(outcome.match_id, outcome.status, outcome.duplicate, None, outcome.missed_windows)
        return _json_response(body, 200 if outcome.duplicate else 201)

    @extend_schema(
        operation_id="matches_submit",
        summary="Submit one match's results (idempotent by match_id)",
        request=MatchInSerializer,
        responses={201: MatchOutSerializer, 200: MatchOutSerializer, 409: ErrorBodySerializer, **SUBMIT_ERRORS},
    )
    def post(self, request: Request, game: str) -> Response:
        match = _fast_match(request.data)
        if match is None:
            serializer = MatchInSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            match = serializer.to_match()
        key = request.auth
        assert isinstance(key, ServerKey)  # the view's ServerKeyAuthentication
        outcome = ingest.match_submit_gathered(game=self.game(), server_key=key, match=match)
        # the same keys, in the same order, as MatchOutSerializer (the documented schema) renders
        body = _item(outcome.match_id, outcome.status, outcome.duplicate, None, outcome.missed_windows)
        return Response(body, status=status.HTTP_200_OK if outcome.duplicate else status.HTTP_201_CREATED)


class MatchBatchApi(ServerApiView):
    @extend_schema(
        operation_id="matches_submit_batch",
        summary="Submit up to 1000 matches; each stands alone",
        description=(
            "One result per match, in request order. Each match stands alone: an invalid one is `rejected` with "
            "its error and the others are stored; a match sent before is answered as it was stored "
            "(`duplicate: true`). A body that is not a list of 1-1000 matches is a 400 and stores nothing."
        ),
        request=BatchInSerializer,
        responses={200: BatchOutSerializer, **SUBMIT_ERRORS},
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
