"""Players' tokens (and their revocation), one-time login links and friend lists (docs/api.md §5, §3.2)."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard_project.errors import (
    ErrorBodySerializer,
    NotFound,
)
from scores import accounts, services
from scores.api.common import ERRORS, ExactIdField, ServerApiView
from scores.auth import signature_use_once
from scores.ids import PLAYER_RE, player_id_check
from scores.models import Game, Player

# --- players: tokens and friends (docs/api.md §5, §3.2) ---------------------------------

PLAYER_ERRORS = {404: OpenApiResponse(ErrorBodySerializer, description="unknown game or player"), **ERRORS}
# docs/api.md §3.1, "Requests that mint credentials": served once per signature
MINT_ERRORS = {
    **PLAYER_ERRORS,
    401: OpenApiResponse(
        ErrorBodySerializer, description="missing, malformed or wrong signature, or one already served (a replay)"
    ),
    503: OpenApiResponse(
        ErrorBodySerializer,
        description="`redis_unavailable`: the replay check cannot be made; nothing made, retry after `Retry-After`",
    ),
}


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
        summary="A bearer token with which the game client reads as this player",
        description=(
            "Sent as `Authorization: Bearer <token>` on the player's own board reads and the websocket. "
            "A signature is served once: the same signed request again (a replay) is a 401."
        ),
        request=None,
        responses={200: TokenOutSerializer, **MINT_ERRORS},
    )
    def post(self, request: Request, game: str, player: str) -> Response:
        found = _player(self.game(), player)
        signature_use_once(request)
        token, expires_at = services.player_token_issue(player=found)
        return Response(TokenOutSerializer({"token": token, "expires_at": expires_at}).data)


class LoginLinkOutSerializer(serializers.Serializer):
    url = serializers.URLField()
    expires_at = serializers.DateTimeField()


class PlayerLoginLinkApi(ServerApiView):
    """An addition to the API (docs/api.md §7, docs/players.md): a one-time link that signs the player
    in to the web pages, made by the game's server and handed to the player. It works once,
    before expires_at, and signs the browser in as the site user who plays as this player
    (created on first use; never a staff account). A signature is served once: the same signed
    request again (a replay) is a 401. (drf-spectacular shows this docstring as the operation's
    description.)"""

    @extend_schema(
        operation_id="players_login_link",
        summary="A one-time link that signs this player in to the leaderboard web pages",
        request=None,
        responses={200: LoginLinkOutSerializer, **MINT_ERRORS},
    )
    def post(self, request: Request, game: str, player: str) -> Response:
        found = _player(self.game(), player)
        signature_use_once(request)
        link = accounts.login_link_create(player=found)
        url = request.build_absolute_uri(reverse("login-link", args=[link.token]))
        return Response(LoginLinkOutSerializer({"url": url, "expires_at": link.expires_at}).data)


class PlayerTokensRevokeApi(ServerApiView):
    """An addition to the API (docs/api.md §3.2): every bearer token made for this player so
    far is refused from the next request on (every read, the websocket handshake),
    and open websockets on them are closed (4401) within seconds. Tokens made afterwards
    work. (drf-spectacular shows this docstring as the operation's description.)"""

    @extend_schema(
        operation_id="players_tokens_revoke",
        summary="Revoke every bearer token made for this player so far",
        request=None,
        responses={
            204: OpenApiResponse(description="revoked"),
            **PLAYER_ERRORS,
            503: OpenApiResponse(
                ErrorBodySerializer,
                description="`redis_unavailable`: nothing revoked; retry after `Retry-After`",
            ),
        },
    )
    def post(self, request: Request, game: str, player: str) -> Response:
        services.player_tokens_revoke(player=_player(self.game(), player))
        return Response(status=204)


class FriendsApi(ServerApiView):
    @extend_schema(
        operation_id="players_friends_replace",
        summary="Replace a player's friend list (mutual, at most 1000)",
        description=(
            "The list replaces the old one whole, and the answer is the new list, sorted. Friendship is mutual: "
            "adding B to A's list adds A to B's, and dropping B drops A from B's. Friends who have not played yet "
            "are kept and appear on the friends board once they have a score. A player cannot be their own "
            "friend, and has at most 1000 (400)."
        ),
        request=FriendListInSerializer,
        responses={200: FriendListOutSerializer, **ERRORS},
    )
    def put(self, request: Request, game: str, player: str) -> Response:
        player_id_check(player)
        body = FriendListInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        friends = services.friends_replace(game=self.game(), player_id=player, friends=body.validated_data["friends"])
        return Response(FriendListOutSerializer({"friends": friends}).data)
