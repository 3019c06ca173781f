"""Frozen standings (docs/api.md §10). Public, like /top."""

from __future__ import annotations

from typing import Any

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
from boards.api.common import REGION_PARAM, WINDOW_PARAM, QueryIntegerField
from leaderboard_project.errors import RATE_LIMITED, NotFound
from scores import encoding, windows
from scores.auth import ServerKeyAuthentication, server_key_permission
from scores.ids import SLUG_RE
from scores.selectors import BoardConfig
from seasons.export import csv_response, group_csv_response
from seasons.selectors import freeze_of, frozen_part, latest_freeze, standings_page


class StandingsQuerySerializer(serializers.Serializer):
    limit = QueryIntegerField(min_value=1, max_value=1000, default=100)
    # bounded: positions are 32-bit integers, and a larger offset is an empty page anyway
    offset = QueryIntegerField(min_value=0, max_value=2_000_000_000, default=0)
    region = serializers.CharField(required=False, trim_whitespace=False, help_text="a region's frozen standings")
    group = serializers.CharField(
        required=False, max_length=32, help_text="a league group's frozen standings (docs/competitions.md)"
    )
    version = QueryIntegerField(min_value=1, required=False)


# One row of frozen standings. Its schema component is `FrozenEntry`, the name both clients
# give it: their `Standing` is a player's rank read (the schema's `PlayerOut`).
class FrozenEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField(help_text="as the board displays ranks: equal values may share one")
    position = serializers.IntegerField(help_text="1-based place in the frozen order, unique")
    player = serializers.CharField(source="player.external_id")
    display_name = serializers.CharField(source="player.display_name")
    score = serializers.IntegerField(source="value")
    reached_at = serializers.DateTimeField()
    subscores = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="only on boards that declare sub-scores: the frozen value's sub-scores by name",
    )


class StandingsOutSerializer(BoardWindowOutSerializer):
    group = serializers.CharField(required=False, help_text="the league group read (?group=), when one was")
    version = serializers.IntegerField()
    frozen_at = serializers.DateTimeField()
    total = serializers.IntegerField()
    entries = FrozenEntrySerializer(many=True)


class StandingsApi(APIView):
    replica_reads = True  # frozen: may come from a replica (docs/operations.md, "Read replicas")

    @extend_schema(
        operation_id="boards_standings",
        summary="The frozen final standings of an explicit window (the latest version, or ?version=N)",
        parameters=[
            OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
            OpenApiParameter("offset", {"type": "integer", "minimum": 0, "maximum": 2_000_000_000, "default": 0}),
            OpenApiParameter(
                "region", {"type": "string", "pattern": SLUG_RE}, description="a region's frozen standings"
            ),
            OpenApiParameter(
                "group",
                {"type": "string", "pattern": "^[0-9]+$", "maxLength": 32},
                description="a league group's frozen standings (the `group` of the league read), its own version",
            ),
            OpenApiParameter(
                "version",
                {"type": "integer", "minimum": 1},
                description="an earlier frozen version (default: the latest); with `group`, the group's own",
            ),
        ],
        responses={
            200: StandingsOutSerializer,
            400: ErrorBodySerializer,
            404: OpenApiResponse(
                ErrorBodySerializer, description="unknown game, board, window, group or version, or not frozen yet"
            ),
            429: RATE_LIMITED,
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
        if q.get("group") is not None:
            return self._group(cfg, game, board, window, q)
        freeze = latest_freeze(cfg.id, window=window)
        if freeze is None:
            raise NotFound(f"the standings of {window} are not frozen yet", code="not_frozen")
        version = q.get("version")
        if version is not None and version != freeze.version:
            freeze = freeze_of(cfg.id, window=window, version=version)
            if freeze is None:
                raise NotFound(f"{window} has no frozen version {version}", code="unknown_version")
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
        return Response(_with_subscores(cfg, body, entries))

    def _group(self, cfg: BoardConfig, game: str, board: str, window: str, q: dict[str, Any]) -> Response:
        # a region's window (eu/season:s1) has no league groups: 404, as any window without them
        part = frozen_part(cfg, window=window, group=q["group"], version=q.get("version"))
        if part is None:
            what = f"version {q['version']} of " if q.get("version") else ""
            raise NotFound(
                f"board {board!r} has no {what}league group {q['group']!r} frozen in {window}", code="unknown_group"
            )
        entries = part.page(q["offset"], q["limit"])
        body = StandingsOutSerializer(
            {
                "game": game,
                "board": board,
                "window": window,
                "group": q["group"],
                "version": part.version,
                "frozen_at": part.frozen_at,
                "total": part.total,
                "entries": entries,
            }
        ).data
        return Response(_with_subscores(cfg, body, entries))


def _with_subscores(cfg: BoardConfig, body: dict[str, Any], standings: list[Any]) -> dict[str, Any]:
    """A board with sub-scores: each entry carries its frozen value's (docs/api.md §2.3), decoded
    from the standing's sort key."""
    if cfg.subscores:
        for item, standing in zip(body["entries"], standings, strict=True):
            item["subscores"] = encoding.decode_subscores(cfg, standing.encoded)
    return body


class ExportQuerySerializer(WindowQuerySerializer):
    version = QueryIntegerField(min_value=1, required=False)
    group = serializers.CharField(
        required=False, max_length=32, help_text="a league group's frozen standings (docs/competitions.md)"
    )


class WindowExportApi(APIView):
    """A board window as CSV: a frozen window's standings (latest version, or ?version=N), else
    the window's current values, in the board order (docs/api.md §6)."""

    replica_reads = True  # may lag a little; never the caller's own writes (docs/operations.md)

    authentication_classes = [ServerKeyAuthentication]
    permission_classes = [server_key_permission(None)]  # any key of the game: its own servers read it

    @extend_schema(
        operation_id="boards_export",
        summary="A board window as CSV (frozen standings, or the current values) for a game's servers",
        parameters=[
            WINDOW_PARAM,
            OpenApiParameter(
                "version", {"type": "integer", "minimum": 1}, description="a frozen version (default: the latest)"
            ),
            REGION_PARAM,
            OpenApiParameter(
                "group",
                {"type": "string", "pattern": "^[0-9]+$", "maxLength": 32},
                description="a league group's frozen standings (the `group` of the league read): its latest version, or `version`",
            ),
        ],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="game,board,window,version,rank,position,player,display_name,score,reached_at",
            ),
            400: ErrorBodySerializer,
            401: ErrorBodySerializer,
            403: ErrorBodySerializer,
            404: OpenApiResponse(ErrorBodySerializer, description="unknown game, board, window, version or group"),
        },
    )
    def get(self, request: Request, game: str, board: str) -> HttpResponseBase:
        cfg, q, window = board_window(game, board, request, ExportQuerySerializer)
        if q.get("group") is not None:
            # a region's window has no league groups: like any other window without them, 404
            part = frozen_part(cfg, window=window, group=q["group"], version=q.get("version"))
            if part is None:
                what = f"version {q['version']} of " if q.get("version") else ""
                raise NotFound(
                    f"board {board!r} has no {what}league group {q['group']!r} frozen in {window}",
                    code="unknown_group",
                )
            return group_csv_response(cfg, window, q["group"], part)
        freeze = freeze_of(cfg.id, window=window, version=q.get("version"))
        if q.get("version") and freeze is None:
            raise NotFound(f"{window} has no frozen version {q['version']}", code="unknown_version")
        return csv_response(cfg, window, freeze)
