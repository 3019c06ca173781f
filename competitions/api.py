"""The tournaments' API (docs/api.md §12.1, docs/competitions.md): the list (public) and the join
(a server key of the game, or that player's token)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from competitions import selectors, services
from competitions.tournaments import STATES, tournament_of
from leaderboard_project.errors import ApiError, ErrorBodySerializer, NotFound
from scores.auth import PlayerPrincipal, PlayerTokenAuthentication, ServerKeyAuthentication
from scores.ids import player_id_check
from scores.models import ServerKey
from scores.selectors import GameConfig, cached_game_config
from scores.selectors.players import player_pk


def _game_config(slug: str) -> GameConfig:
    config = cached_game_config(slug, stale_ok=False)
    if config is None:
        raise NotFound(f"unknown game {slug!r}")
    return config


class TournamentListApi(APIView):
    authentication_classes: list[type] = []
    permission_classes: list[type] = []

    class QuerySerializer(serializers.Serializer):
        state = serializers.ChoiceField(choices=list(STATES), required=False)

    class TournamentSerializer(serializers.Serializer):
        slug = serializers.CharField()
        name = serializers.CharField()
        state = serializers.ChoiceField(choices=list(STATES))
        starts_at = serializers.DateTimeField()
        ends_at = serializers.DateTimeField()
        size = serializers.IntegerField(help_text="players who joined")
        max_size = serializers.IntegerField(help_text="0: unlimited")
        join_required = serializers.BooleanField()
        max_attempts = serializers.IntegerField(help_text="results that count per player per period; 0: unlimited")

    class OutputSerializer(serializers.Serializer):
        tournaments = serializers.ListField(child=serializers.DictField())

        class Meta:
            ref_name = "TournamentList"  # the schema's component name: every view's is "Output"

    @extend_schema(
        operation_id="tournaments_list",
        summary="The game's tournaments: active, upcoming or ended",
        parameters=[OpenApiParameter("state", str, enum=list(STATES), required=False)],
        responses={
            200: OutputSerializer,
            400: OpenApiResponse(ErrorBodySerializer, description="unknown state"),
            404: OpenApiResponse(ErrorBodySerializer, description="unknown game"),
        },
    )
    def get(self, request: Request, game: str) -> Response:
        query = self.QuerySerializer(data=request.query_params)
        if not query.is_valid():
            raise ApiError(f"state must be one of {', '.join(STATES)}", code="invalid_query")
        config = _game_config(game)
        rows = selectors.tournaments_list(config, state=query.validated_data.get("state"), now=timezone.now())
        body: list[dict[str, Any]] = [
            self.TournamentSerializer(
                {
                    "slug": r.slug,
                    "name": r.name,
                    "state": r.state,
                    "starts_at": r.tournament.starts_at,
                    "ends_at": r.tournament.ends_at,
                    "size": r.size,
                    "max_size": r.tournament.max_size,
                    "join_required": r.tournament.join_required,
                    "max_attempts": r.tournament.max_attempts,
                }
            ).data
            for r in rows
        ]
        return Response({"tournaments": body})


class TournamentJoinApi(APIView):
    authentication_classes = [ServerKeyAuthentication, PlayerTokenAuthentication]
    permission_classes: list[type] = []

    class OutputSerializer(serializers.Serializer):
        joined = serializers.BooleanField()
        size = serializers.IntegerField()

        class Meta:
            ref_name = "TournamentJoin"

    @extend_schema(
        operation_id="tournaments_join",
        summary="Join a player to a tournament (twice is harmless)",
        request=None,
        responses={
            200: OutputSerializer,
            400: OpenApiResponse(ErrorBodySerializer, description="`invalid_player`: a player id outside its form"),
            401: OpenApiResponse(ErrorBodySerializer, description="neither signed nor a player token"),
            403: OpenApiResponse(ErrorBodySerializer, description="another game's key, or another player's token"),
            404: OpenApiResponse(ErrorBodySerializer, description="unknown game, tournament or player"),
            409: OpenApiResponse(ErrorBodySerializer, description="`tournament_full` or `tournament_ended`"),
        },
    )
    def post(self, request: Request, game: str, board: str, player: str) -> Response:
        config = _game_config(game)
        external_id = player_id_check(player)
        self._authorize(request, config, external_id)
        cfg = config.boards.get(board)
        if cfg is None or tournament_of(cfg) is None:
            raise NotFound(f"unknown tournament {board!r}", code="unknown_tournament")
        size = services.tournament_join(cfg, player_external_id=external_id, now=timezone.now())
        return Response(self.OutputSerializer({"joined": True, "size": size}).data)

    @staticmethod
    def _authorize(request: Request, config: GameConfig, external_id: str) -> None:
        user, auth = request.user, request.auth
        if isinstance(auth, ServerKey):
            if auth.game_id != config.game.id:
                raise exceptions.PermissionDenied("this key belongs to another game")
            if "submit" not in auth.scopes:
                raise exceptions.PermissionDenied("this key lacks the 'submit' scope")
            return
        if isinstance(user, PlayerPrincipal):
            if user.game_id == config.game.id and user.player_pk == player_pk(config.game.id, external_id=external_id):
                return
            raise exceptions.PermissionDenied("a player may join only themselves")
        raise exceptions.NotAuthenticated("sign the request, or send the player's token (Authorization: Bearer ...)")
