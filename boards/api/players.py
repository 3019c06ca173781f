"""Reads about one player: their standing and their friends board."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from boards import index, selectors
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
    entry_body,
    friend_entry_body,
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
    the player's friends."""

    authentication_classes = [ServerKeyAuthentication, PlayerTokenAuthentication, SessionAuthentication]
    throttle_classes = [PlayerReadThrottle]
    content_negotiation_class = JsonOnly

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
        if player_pk_cached(cfg.game_id, external_id=kw["player"]) != user.player_pk:
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
    def get(self, request: Request, game: str, board: str, player: str) -> Response:
        if self._prefetched is not None:
            (cfg, window, pk, around), reply = self._prefetched
        else:
            cfg, q, window = board_window(game, board, request, PlayerQuerySerializer)
            pk = self.player_pk(request, cfg, player)
            around, reply = q["around"], None
        standing = selectors.player_standing(cfg, window=window, pk=pk, around=around, reply=reply)
        me = standing.me
        body = {
            "game": game,
            "board": board,
            "window": window,
            "player": player,
            "display_name": me.display_name if me else None,
            "rank": me.rank if me else None,
            "score": me.value if me else None,
            "total": standing.total,
            "percentile": standing.percentile,
            "metadata": me.metadata if me else None,
            "around": [entry_body(e) for e in standing.around],
            "rank_exact": standing.rank_exact,
        }
        if not standing.rank_exact:
            body["rank_error"] = standing.rank_error
        if standing.degraded:
            body["degraded"] = True
        return Response(body)


class FriendsBoardApi(PlayerReadApi):
    @extend_schema(
        operation_id="boards_friends",
        summary="The player and their friends, ranked among themselves and on the whole board",
        parameters=[WINDOW_PARAM, REGION_PARAM],
        responses={200: FriendsOutSerializer, **PLAYER_READ_ERRORS},
    )
    def get(self, request: Request, game: str, board: str, player: str) -> Response:
        cfg, _, window = board_window(game, board, request)
        pk = self.player_pk(request, cfg, player)
        friends = selectors.friends_board(cfg, window=window, pk=pk)
        body = {
            "game": game,
            "board": board,
            "window": window,
            "player": player,
            "entries": [friend_entry_body(f) for f in friends.entries],
            "rank_exact": True,
        }
        if friends.degraded:
            body["degraded"] = True
        return Response(body)
