"""Moderation endpoints for game servers' anti-cheat services (docs/api.md §8, scope
`moderate`): void and approve. Thin, like every API view: parse, call a service, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from anticheat import services as moderation
from leaderboard_project.errors import ErrorBodySerializer
from scores.api.common import ERRORS, ServerApiView, TextField
from scores.auth import server_key_permission
from scores.ids import match_id_check


class VoidInSerializer(serializers.Serializer):
    reason = TextField(min_length=1, max_length=2000, trim_whitespace=True)


class ApproveInSerializer(serializers.Serializer):
    reason = TextField(required=False, allow_blank=True, max_length=2000)


class ModerationOutSerializer(serializers.Serializer):
    match_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["accepted", "held", "voided"])


MODERATION_ERRORS = {
    400: OpenApiResponse(ErrorBodySerializer, description="invalid body (a void needs a reason)"),
    401: ERRORS[401],
    403: OpenApiResponse(ErrorBodySerializer, description="key of another game, revoked, or without 'moderate'"),
    404: OpenApiResponse(ErrorBodySerializer, description="unknown game or match"),
}


class ModerationApiView(ServerApiView):
    permission_classes = [server_key_permission("moderate")]


class MatchVoidApi(ModerationApiView):
    @extend_schema(
        operation_id="matches_void",
        summary="Void a match: it stops counting everywhere (voiding twice is harmless)",
        description=(
            "Each affected player's value per board and window is recomputed from their remaining valid matches "
            "and rewritten on every board (removed where nothing remains); frozen standings get a new version."
        ),
        request=VoidInSerializer,
        responses={200: ModerationOutSerializer, **MODERATION_ERRORS},
    )
    def post(self, request: Request, game: str, match_id: str) -> Response:
        body = VoidInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        match = moderation.match_get(game=self.game(), match_id=match_id_check(match_id))
        match = moderation.match_void(
            match=match, reason=body.validated_data["reason"], actor=moderation.Actor.of_key(request.auth)
        )
        return Response(ModerationOutSerializer({"match_id": match.match_id, "status": match.status}).data)


class MatchApproveApi(ModerationApiView):
    @extend_schema(
        operation_id="matches_approve",
        summary="Approve a held match: it counts as if accepted on arrival",
        request=ApproveInSerializer,
        responses={
            200: ModerationOutSerializer,
            409: OpenApiResponse(ErrorBodySerializer, description="the match was voided"),
            **MODERATION_ERRORS,
        },
    )
    def post(self, request: Request, game: str, match_id: str) -> Response:
        body = ApproveInSerializer(data=request.data)  # no body at all is {} here; 0, [] or "" are not
        body.is_valid(raise_exception=True)
        match = moderation.match_get(game=self.game(), match_id=match_id_check(match_id))
        match = moderation.match_approve(
            match=match, actor=moderation.Actor.of_key(request.auth), reason=body.validated_data.get("reason", "")
        )
        return Response(ModerationOutSerializer({"match_id": match.match_id, "status": match.status}).data)
