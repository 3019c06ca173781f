"""Players' tokens, one-time login links and friend lists (contract sections 5 and 7)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard_project.errors import (
    ErrorBodySerializer,
    NotFound,
)
from scores import services
from scores.api.common import ERRORS, ExactIdField, ServerApiView
from scores.ids import PLAYER_RE, player_id_check
from scores.models import Game, Player

# --- players: tokens and friends (contract sections 5 and 7) ---------------------------------


class TokenOutSerializer(serializers.Serializer):
    token = serializers.CharField()
    expires_at = serializers.DateTimeField()


class FriendListInSerializer(serializers.Serializer):
    friends = serializers.ListField(child=ExactIdField(PLAYER_RE, max_length=64), max_length=services.MAX_FRIENDS)


class FriendListOutSerializer(serializers.Serializer):
    friends = serializers.ListField(child=serializers.CharField())


def _player(game: Game, player: str) -> Player:
    found = Player.objects.filter(game=game, external_id=player_id_check(player)).first()
    if found is None:
        raise NotFound(f"unknown player {player!r}", code="unknown_player")
    return found


class PlayerTokenApi(ServerApiView):
    @extend_schema(
        operation_id="players_token",
        request=None,
        responses={200: TokenOutSerializer, 404: ErrorBodySerializer, **ERRORS},
        summary="A bearer token with which the game client reads as this player",
    )
    def post(self, request: Request, game: str, player: str) -> Response:
        found = _player(self.game(), player)
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

        found = _player(self.game(), player)
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
