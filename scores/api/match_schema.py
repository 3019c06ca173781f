"""The submission bodies as the OpenAPI schema documents them (docs/api.md §4), for
drf-spectacular only: no request is validated by these serializers. scores/api/match_body.py
parses every submission; tests/scores/test_match_body.py holds the two to the same answers
(what one accepts the other accepts, as the same match)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard_project.errors import ErrorSerializer
from scores.api.common import ExactIdField, TextField
from scores.api.match_body import (
    MAX_BATCH,
    MAX_MATCH_ID,
    MAX_METADATA_BYTES,
    MAX_RESULTS,
    ended_at_parse,
    metadata_too_large,
)
from scores.ids import MATCH_ID_RE, PLAYER_RE, SLUG_RE


class StrictIntegerField(serializers.IntegerField):
    """JSON integers only: "12", 12.0 and true are not scores."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


# ENDED_AT_MIN <= ended_at < ENDED_AT_MAX for the schema: the years between, and the two edge
# years but their edge day (there, the offset decides; the schema keeps to the safe side)
_YEARS = r"(?:197[1-9]|19[89][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-7])-[0-9]{2}-[0-9]{2}"
_EDGE_YEARS = r"1970-(?:01-(?:0[2-9]|[12][0-9]|3[01])|(?:0[2-9]|1[0-2])-[0-9]{2})|9998-(?:(?:0[1-9]|1[01])-[0-9]{2}|12-(?:[0-2][0-9]|30))"
_TIME = r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
ENDED_AT_RE = rf"^(?:{_YEARS}|{_EDGE_YEARS}){_TIME}$"


@extend_schema_field({"type": "string", "format": "date-time", "pattern": ENDED_AT_RE})
class Rfc3339Field(serializers.Field):
    def to_internal_value(self, data: Any) -> datetime:
        try:
            return ended_at_parse(data)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

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
        if metadata_too_large(data):
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
    match_id = ExactIdField(MATCH_ID_RE, max_length=MAX_MATCH_ID)
    ended_at = Rfc3339Field()
    # many=True hands min_length and max_length to DRF's ListSerializer; the stubs do not know
    results = ResultInSerializer(many=True, min_length=1, max_length=MAX_RESULTS)  # type: ignore[call-arg]


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
