"""The game description (docs/api.md §5.1): public."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard_project.errors import (
    RATE_LIMITED,
    ErrorBodySerializer,
    NotFound,
)
from scores import selectors

# --- game description (docs/api.md §5.1): public -----------------------------------------------

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
    mode = serializers.ChoiceField(choices=["best", "total", "latest"])
    windows = serializers.ListField(child=serializers.CharField())
    min_score = serializers.IntegerField()
    max_score = serializers.IntegerField()
    rank_display = serializers.ChoiceField(choices=["unique", "shared"])
    format = serializers.SerializerMethodField(help_text='how pages show scores: "integer" (the only format so far)')
    regions = serializers.BooleanField(help_text="the board also keeps one board per region of the game")

    def get_format(self, board: object) -> str:
        # Boards have no score format yet (docs/api.md §2.2 names the TOML key); every board
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
    @extend_schema(
        operation_id="games_list",
        summary="The games served here",
        responses={200: GamesOutSerializer, 429: RATE_LIMITED},
    )
    def get(self, request: Request) -> Response:
        return _cacheable(Response(GamesOutSerializer({"games": selectors.games_list()}).data))


class GameApi(APIView):
    @extend_schema(
        operation_id="games_describe",
        summary="A game's boards (order, mode, windows, bounds, rank display), seasons and regions",
        responses={200: GameOutSerializer, 404: ErrorBodySerializer, 429: RATE_LIMITED},
    )
    def get(self, request: Request, game: str) -> Response:
        found = selectors.game_describe(slug=game)
        if found is None:
            raise NotFound(f"unknown game {game!r}", code="unknown_game")
        return _cacheable(Response(GameOutSerializer(found).data))
