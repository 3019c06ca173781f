"""Frozen standings (contract section 10). Public, like /top."""

from __future__ import annotations

from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from boards.api import (
    BoardWindowOutSerializer,
    ErrorBodySerializer,
    WindowQuerySerializer,
    board_config,
    board_window,
    parsed_query,
)
from leaderboard_project.errors import NotFound
from scores import windows
from scores.auth import ServerKeyAuthentication, server_key_permission
from seasons.export import csv_response
from seasons.selectors import freeze_of, latest_freeze, standings_page


class StandingsQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=100)
    # bounded: positions are 32-bit integers, and a larger offset is an empty page anyway
    offset = serializers.IntegerField(min_value=0, max_value=2_000_000_000, default=0)
    region = serializers.CharField(required=False, help_text="a region's frozen standings")


class StandingSerializer(serializers.Serializer):
    rank = serializers.IntegerField(help_text="as the board displays ranks: equal values may share one")
    position = serializers.IntegerField(help_text="1-based place in the frozen order, unique")
    player = serializers.CharField(source="player.external_id")
    display_name = serializers.CharField(source="player.display_name")
    score = serializers.IntegerField(source="value")
    reached_at = serializers.DateTimeField()


class StandingsOutSerializer(BoardWindowOutSerializer):
    version = serializers.IntegerField()
    frozen_at = serializers.DateTimeField()
    total = serializers.IntegerField()
    entries = StandingSerializer(many=True)


class StandingsApi(APIView):
    replica_reads = True  # frozen: may come from a replica (docs/operations.md, "Read replicas")

    @extend_schema(
        operation_id="boards_standings",
        summary="The frozen final standings of an explicit window (latest version)",
        parameters=[StandingsQuerySerializer],
        responses={
            200: StandingsOutSerializer,
            400: ErrorBodySerializer,
            404: OpenApiResponse(ErrorBodySerializer, description="unknown game, board or window, or not frozen yet"),
        },
    )
    def get(self, request: Request, game: str, board: str, window: str) -> Response:
        cfg = board_config(game, board)
        q = parsed_query(StandingsQuerySerializer, request)
        if windows.kind_of(window) not in cfg.windows or window in windows.CURRENT_WINDOWS or "/" in window:
            raise NotFound(
                f"unknown window {window!r}: name an explicit window, e.g. daily:2026-11-28", code="unknown_window"
            )
        region = q.get("region")
        if region:
            if cfg.region(region) is None:
                raise NotFound(f"board {board!r} has no region {region!r}", code="unknown_region")
            window = windows.in_region(region, window)
        freeze = latest_freeze(cfg.id, window=window)
        if freeze is None:
            raise NotFound(f"the standings of {window} are not frozen yet", code="not_frozen")
        entries = standings_page(freeze, offset=q["offset"], limit=q["limit"])
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


class ExportQuerySerializer(WindowQuerySerializer):
    version = serializers.IntegerField(min_value=1, required=False)


class WindowExportApi(APIView):
    """A board window as CSV: a frozen window's standings (latest version, or ?version=N), else
    the window's current values, in the contract's order."""

    replica_reads = True  # may lag a little; never the caller's own writes (docs/operations.md)

    authentication_classes = [ServerKeyAuthentication]
    permission_classes = [server_key_permission(None)]  # any key of the game: its own servers read it

    @extend_schema(
        operation_id="boards_export",
        summary="A board window as CSV (frozen standings, or the current values) for a game's servers",
        parameters=[
            OpenApiParameter("window", str, description="current (daily, ...) or explicit (weekly:2026-W48)"),
            OpenApiParameter("version", int, description="a frozen version (default: the latest)"),
            OpenApiParameter("region", str),
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="game,board,window,version,rank,position,player,display_name,score,reached_at",
            ),
            400: ErrorBodySerializer,
            401: ErrorBodySerializer,
            403: ErrorBodySerializer,
            404: OpenApiResponse(ErrorBodySerializer, description="unknown game, board, window or version"),
        },
    )
    def get(self, request: Request, game: str, board: str) -> HttpResponseBase:
        cfg, q, window = board_window(game, board, request, ExportQuerySerializer)
        freeze = freeze_of(cfg.id, window=window, version=q.get("version"))
        if q.get("version") and freeze is None:
            raise NotFound(f"{window} has no frozen version {q['version']}", code="unknown_version")
        return csv_response(cfg, window, freeze)
