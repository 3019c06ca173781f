"""Frozen standings (contract section 10). Public, like /top."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from boards.api import ErrorBodySerializer, _board, _query
from leaderboard_project.errors import NotFound
from scores import windows
from seasons.selectors import latest_freeze, standings_page


class StandingsQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=100)
    # bounded: positions are 32-bit integers, and a larger offset is an empty page anyway
    offset = serializers.IntegerField(min_value=0, max_value=2_000_000_000, default=0)
    region = serializers.CharField(required=False, help_text="a region's frozen standings")


class StandingSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    position = serializers.IntegerField()
    player = serializers.CharField(source="player.external_id")
    display_name = serializers.CharField(source="player.display_name")
    score = serializers.IntegerField(source="value")
    reached_at = serializers.DateTimeField()


class StandingsOutSerializer(serializers.Serializer):
    game = serializers.CharField()
    board = serializers.CharField()
    window = serializers.CharField()
    version = serializers.IntegerField()
    frozen_at = serializers.DateTimeField()
    total = serializers.IntegerField()
    entries = StandingSerializer(many=True)


class StandingsApi(APIView):
    @extend_schema(
        operation_id="boards_standings",
        parameters=[StandingsQuerySerializer],
        responses={
            200: StandingsOutSerializer,
            400: ErrorBodySerializer,
            404: OpenApiResponse(ErrorBodySerializer, description="unknown game, board or window, or not frozen yet"),
        },
        summary="The frozen final standings of an explicit window (latest version)",
    )
    def get(self, request: Request, game: str, board: str, window: str) -> Response:
        cfg = _board(game, board)
        q = _query(StandingsQuerySerializer, request)
        if windows.kind_of(window) not in cfg.windows or window in windows.CURRENT_WINDOWS or "/" in window:
            raise NotFound(
                f"unknown window {window!r}: name an explicit window, e.g. daily:2026-11-28", code="unknown_window"
            )
        region = q.get("region")
        if region:
            if cfg.region(region) is None:
                raise NotFound(f"board {board!r} has no region {region!r}", code="unknown_region")
            window = windows.in_region(region, window)
        freeze = latest_freeze(cfg.id, window)
        if freeze is None:
            raise NotFound(f"the standings of {window} are not frozen yet", code="not_frozen")
        entries = standings_page(freeze, q["offset"], q["limit"])
        body = StandingsOutSerializer(
            {
                "game": game,
                "board": board,
                "window": window,
                "version": freeze.version,
                "frozen_at": freeze.frozen_at,
                "total": freeze.entries,
                "entries": entries,
            }
        ).data
        return Response(body)
