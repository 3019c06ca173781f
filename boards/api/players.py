"""Reads about one player: their standing and their friends board."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.views import APIView

from boards import index, selectors
from boards.api import thin
from boards.api.common import (
    AROUND_PARAM,
    PLAYER_READ_ERRORS,
    REGION_PARAM,
    WINDOW_PARAM,
    FriendsOutSerializer,
    JsonOnly,
    PlayerOutSerializer,
    PlayerQuerySerializer,
    board_window,
    parsed_query,
    resolved_window,
)
from boards.profiles import friend_pks, player_pk, player_pk_cached
from boards.throttles import PlayerReadThrottle
from leaderboard_project.errors import NotFound
from rediskit.client import REDIS_DOWN
from scores.auth import PlayerPrincipal, PlayerTokenAuthentication, ServerKeyAuthentication
from scores.ids import player_id_check
from scores.models import ServerKey
from scores.selectors import BoardConfig, cached_board


class PlayerReadApi(APIView):
    """Reads about one player: allowed for the game's server keys, staff, the player and
    the player's friends. A player's own read is answered by `thin` (boards/api/thin.py)
    when it can, else by this view."""

    authentication_classes = [ServerKeyAuthentication, PlayerTokenAuthentication, SessionAuthentication]
    throttle_classes = [PlayerReadThrottle]
    content_negotiation_class = JsonOnly
    thin_read: Callable[..., HttpResponse | None] | None = None

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Callable[..., HttpResponse]:
        """DRF's view function, behind the thin path. It keeps DRF's attributes (`cls`,
        `initkwargs`, `csrf_exempt`), so URL reversing and the OpenAPI schema see the view."""
        drf_view = super().as_view(**initkwargs)
        thin_read = cls.thin_read

        def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if thin_read is not None and request.method == "GET" and settings.BOARDS_THIN_READS:
                response = thin_read(request, **kwargs)
                if response is not None:
                    return response
            return drf_view(request, *args, **kwargs)

        return functools.wraps(drf_view)(view)

    def player_pk(self, request: Request, cfg: BoardConfig, player: str) -> int:
        if request.user is None or not request.user.is_authenticated:
            raise exceptions.NotAuthenticated("sign the request, or send a player token (Authorization: Bearer ...)")
        pk = player_pk(cfg.game_id, external_id=player_id_check(player))
        if pk is None:
            raise NotFound(f"unknown player {player!r}", code="unknown_player")
        self.authorize(request, cfg.game_id, pk)
        return pk

    @staticmethod
    def authorize(request: Request, game_id: int, pk: int) -> None:
        user, auth = request.user, request.auth
        if isinstance(auth, ServerKey):
            if auth.game_id != game_id:
                raise exceptions.PermissionDenied("this key belongs to another game")
            return
        if isinstance(user, PlayerPrincipal):
            if user.game_id == game_id and (user.player_pk == pk or user.player_pk in friend_pks(pk)):
                return
            raise exceptions.PermissionDenied("players may read only themselves and their friends")
        if getattr(user, "is_staff", False):
            return
        raise exceptions.PermissionDenied("not allowed to read this player")


class PlayerStandingApi(PlayerReadApi):
    thin_read = staticmethod(thin.standing)
    _prefetched: tuple[tuple[BoardConfig, str, int, int], list[Any]] | None = None

    def _own_read(self, request: Request) -> tuple[BoardConfig, str, int, int] | None:
        """(board, window, player, around) when a player token reads its own standing with
        plain parameters and everything is in this process's caches; None for anything else."""
        user = request.user
        if not isinstance(user, PlayerPrincipal):
            return None
        kw = self.kwargs
        cfg = cached_board(kw["game"], board_slug=kw["board"])
        if cfg is None or cfg.game_id != user.game_id or index.fanout(cfg.shards):
            # a sharded board's read is one pipeline per node: the counters go on their own
            return None
        if (
            user.external_id != kw["player"]
            and player_pk_cached(cfg.game_id, external_id=kw["player"]) != user.player_pk
        ):
            return None
        try:
            q = parsed_query(PlayerQuerySerializer, request)
            window = resolved_window(cfg, q["window"], q.get("region"))
        except exceptions.APIException:
            return None
        return cfg, window, user.player_pk, q["around"]

    def check_throttles(self, request: Request) -> None:
        """A player reading their own standing (the hot read) has its rate limits counted by
        the page script itself: one Redis round trip instead of two. The 429 still comes
        before anything the view would answer, and a refused request reads no board. Any
        other read is throttled on its own first, as DRF does."""
        throttles = self.get_throttles()
        plan = self._own_read(request) if len(throttles) == 1 else None
        throttle = throttles[0] if plan is not None else None
        if not isinstance(throttle, PlayerReadThrottle):
            return super().check_throttles(request)
        now = throttle.clock()
        limits, counters, args = throttle.counters(request, now)
        if not limits:
            return None
        cfg, window, pk, around = plan
        try:
            reply = selectors.standing_reply(cfg, window=window, pk=pk, around=around, counters=counters, limits=args)
        except REDIS_DOWN:
            return None  # let through, as the throttle does; the read degrades to Postgres
        if len(reply) == 1:
            throttle.verdict(limits, int(reply[0]), now)
            self.throttled(request, throttle.wait())
        self._prefetched = (plan, reply)
        return None

    @extend_schema(
        operation_id="boards_player",
        summary="A player's exact rank, percentile and the players around them",
        parameters=[WINDOW_PARAM, REGION_PARAM, AROUND_PARAM],
        responses={200: PlayerOutSerializer, **PLAYER_READ_ERRORS},
    )
    def get(self, request: Request, game: str, board: str, player: str) -> HttpResponse:
        if self._prefetched is not None:
            (cfg, window, pk, around), reply = self._prefetched
        else:
            cfg, q, window = board_window(game, board, request, PlayerQuerySerializer)
            pk = self.player_pk(request, cfg, player)
            around, reply = q["around"], None
        standing = selectors.player_standing(cfg, window=window, pk=pk, around=around, reply=reply)
        return thin.json_response(thin.standing_body(game, board, window, player, standing))


class FriendsBoardApi(PlayerReadApi):
    thin_read = staticmethod(thin.friends)

    @extend_schema(
        operation_id="boards_friends",
        summary="The player and their friends, ranked among themselves and on the whole board",
        parameters=[WINDOW_PARAM, REGION_PARAM],
        responses={200: FriendsOutSerializer, **PLAYER_READ_ERRORS},
    )
    def get(self, request: Request, game: str, board: str, player: str) -> HttpResponse:
        cfg, _, window = board_window(game, board, request)
        pk = self.player_pk(request, cfg, player)
        friends = selectors.friends_board(cfg, window=window, pk=pk)
        return thin.json_response(thin.friends_body(game, board, window, player, friends))
