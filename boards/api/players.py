"""Reads about one player: their standing and their friends board (docs/api.md §3.3, §5).

One implementation per endpoint (docs/architecture.md, "One implementation per hot endpoint"):
a GET is answered by the view's `get`, which `dispatch` calls with Django's own request
(leaderboard_project.plain.PlainApiView). Every read goes through the same steps, in the order
DRF's views took them, so every refusal keeps its status: the credentials (401), the rate
limits (429), the board, window and query (404, 400), the player and who may read them (404,
403), then the read, written by the one renderer (leaderboard_project.plain.json_response).

A player reading their own pages on a board of one Redis (the hot read) takes the same steps in
fewer round trips: the board script checks the token's revocation and counts the rate limits in
the read's own round trip (docs/reads.md, "A player's own read"). When the script cannot
confirm the token, Postgres is asked; when Redis is unreachable, the read degrades to Postgres
as any other does."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.authentication import SessionAuthentication

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
    WindowQuerySerializer,
    board_window,
    entry_body,
    plain_query,
    resolved_window,
)
from boards.profiles import friend_pks, player_pk, player_pk_cached
from boards.throttles import PlayerReadThrottle
from boards.types import PlayerStanding
from leaderboard_project.errors import NotFound
from leaderboard_project.plain import PlainApiView, json_response
from rediskit.client import REDIS_DOWN
from scores import encoding
from scores.auth import (
    TOKEN_REFUSED,
    PlayerPrincipal,
    PlayerTokenAuthentication,
    ServerKeyAuthentication,
    player_token_current,
    reader_authenticated,
)
from scores.ids import player_id_check
from scores.models import ServerKey
from scores.selectors import BoardConfig, cached_board

ALLOW = "GET, HEAD, OPTIONS"  # what DRF's APIView answers in Allow for these views
_AUTHENTICATE = ServerKeyAuthentication().authenticate_header(None)  # type: ignore[arg-type]

# A board script's read with the rate limits' counters, their ARGV and a token guard (or None)
# folded in: what `counted` calls
CountedRead = Callable[[list[str], list[int], "selectors.TokenGuard | None"], list[Any]]
# A player's own read: the board, window, query and player first, then CountedRead's arguments
OwnRead = Callable[
    [BoardConfig, str, dict[str, Any], int, list[str], list[int], "selectors.TokenGuard | None"], list[Any]
]


class _Throttled:
    """What PlayerReadThrottle reads of a request: the principal and the client address."""

    def __init__(self, user: Any, request: HttpRequest) -> None:
        self.user = user
        self.META = request.META  # the client address is read from it (PlayerReadThrottle.get_ident)


class PlayerReadApi(PlainApiView):
    """Reads about one player: allowed for the game's server keys, staff, the player and
    the player's friends, rate-limited by PlayerReadThrottle."""

    authentication_classes = [ServerKeyAuthentication, PlayerTokenAuthentication, SessionAuthentication]
    throttle_classes = [PlayerReadThrottle]
    content_negotiation_class = JsonOnly
    plain_methods = ("GET", "HEAD")
    allow = ALLOW
    authenticate = _AUTHENTICATE

    def reader(self, request: HttpRequest) -> tuple[Any, Any]:
        """(user, auth) of a read that is not a player's own hot read: credentials (401) and
        rate limits (429) checked, as `get` does before it looks anything up."""
        user, auth = reader_authenticated(request, check_revoked=False)
        self.checked(request, user)
        return user, auth

    def checked(self, request: HttpRequest, user: Any) -> None:
        """A player token's revocation checked (401) and the rate limits counted (429): what
        comes before anything a read looks up (`user`: reader_authenticated's, the revocation
        left to this)."""
        if isinstance(user, PlayerPrincipal) and not player_token_current(user):
            raise exceptions.AuthenticationFailed(TOKEN_REFUSED)
        throttle = PlayerReadThrottle()
        if not throttle.allow_request(_Throttled(user, request), self):  # type: ignore[arg-type]
            raise exceptions.Throttled(throttle.wait())

    def player_pk(self, user: Any, auth: Any, cfg: BoardConfig, player: str) -> int:
        """The player the URL names, if `user` may read them (401, 404, 403)."""
        if user is None or not user.is_authenticated:
            raise exceptions.NotAuthenticated("sign the request, or send a player token (Authorization: Bearer ...)")
        pk = player_pk(cfg.game_id, external_id=player_id_check(player))
        if pk is None:
            raise NotFound(f"unknown player {player!r}", code="unknown_player")
        if isinstance(auth, ServerKey):
            if auth.game_id != cfg.game_id:
                raise exceptions.PermissionDenied("this key belongs to another game")
            return pk
        if isinstance(user, PlayerPrincipal):
            if user.game_id == cfg.game_id and (user.player_pk == pk or user.player_pk in friend_pks(pk)):
                return pk
            raise exceptions.PermissionDenied("players may read only themselves and their friends")
        if getattr(user, "is_staff", False):
            return pk
        raise exceptions.PermissionDenied("not allowed to read this player")

    def located(
        self,
        request: HttpRequest,
        query: type[serializers.Serializer],
        read: OwnRead,
    ) -> tuple[BoardConfig, dict[str, Any], str, int, list[Any] | None]:
        """The read's board, query, window and player, every check passed in DRF's order, and
        the board script's reply when a player's own read fetched it (`own_read`)."""
        kw = self.kwargs
        user, auth = reader_authenticated(request, check_revoked=False)
        own = self.own_read(request, user, query, read)
        if own is not None:
            return own
        self.checked(request, user)
        cfg, q, window = board_window(kw["game"], kw["board"], request, query)
        return cfg, q, window, self.player_pk(user, auth, cfg, kw["player"]), None

    def own_read(
        self,
        request: HttpRequest,
        user: Any,
        query: type[serializers.Serializer],
        read: OwnRead,
    ) -> tuple[BoardConfig, dict[str, Any], str, int, list[Any] | None] | None:
        """A player token's read of its own pages on a board of one Redis, with plain
        parameters (the hot read): (board, query, window, player, the script's reply, None if
        Redis is unreachable), the token and the rate limits checked in the reply's round trip.
        None for any other read, which `checked` and the lookups answer."""
        kw = self.kwargs
        if not isinstance(user, PlayerPrincipal):
            return None
        cfg = cached_board(kw["game"], board_slug=kw["board"])
        if cfg is None or cfg.game_id != user.game_id or index.fanout(cfg.shards):
            return None  # a sharded board's read is one pipeline per node: the limits go on their own
        if (
            user.external_id != kw["player"]
            and player_pk_cached(cfg.game_id, external_id=kw["player"]) != user.player_pk
        ):
            return None
        q = plain_query(query, request.GET)
        if q is None:
            return None
        try:
            window = resolved_window(cfg, q["window"], q.get("region"))
        except exceptions.APIException:
            return None  # the lookups word the 404
        return (
            cfg,
            q,
            window,
            user.player_pk,
            self.counted(request, user, functools.partial(read, cfg, window, q, user.player_pk)),
        )

    @staticmethod
    def counted(request: HttpRequest, user: PlayerPrincipal, read: CountedRead) -> list[Any] | None:
        """The script's reply, the token confirmed (401) and the rate limits counted (429) in
        its round trip; None when Redis is unreachable (the token then confirmed by Postgres)."""
        throttle = PlayerReadThrottle()
        now = throttle.clock()
        limits, counters, args = throttle.counters(_Throttled(user, request), now)  # type: ignore[arg-type]
        try:
            try:
                reply = read(counters, args, (user.player_pk, user.generation))
            except selectors.TokenUnconfirmed as exc:
                # Redis does not hold the player's generation: Postgres decides (and mirrors it)
                if exc.revoked or not player_token_current(user):
                    raise exceptions.AuthenticationFailed(TOKEN_REFUSED) from None
                reply = read(counters, args, None)
        except REDIS_DOWN:
            if not player_token_current(user):
                raise exceptions.AuthenticationFailed(TOKEN_REFUSED) from None
            return None  # let through, as the throttle does; the read degrades to Postgres
        if limits and len(reply) == 1:
            throttle.verdict(limits, int(reply[0]), now)
            raise exceptions.Throttled(throttle.wait())
        return reply


class PlayerStandingApi(PlayerReadApi):
    @extend_schema(
        operation_id="boards_player",
        summary="A player's exact rank, percentile and the players around them",
        parameters=[WINDOW_PARAM, REGION_PARAM, AROUND_PARAM],
        responses={200: PlayerOutSerializer, **PLAYER_READ_ERRORS},
    )
    def get(self, request: HttpRequest, game: str, board: str, player: str) -> HttpResponse:
        cfg, q, window, pk, reply = self.located(request, PlayerQuerySerializer, _standing_read)
        standing = selectors.player_standing(cfg, window=window, pk=pk, around=q["around"], reply=reply)
        return json_response(standing_body(game, board, window, player, standing), allow=ALLOW)


class FriendsBoardApi(PlayerReadApi):
    @extend_schema(
        operation_id="boards_friends",
        summary="The player and their friends, ranked among themselves and on the whole board",
        parameters=[WINDOW_PARAM, REGION_PARAM],
        responses={200: FriendsOutSerializer, **PLAYER_READ_ERRORS},
    )
    def get(self, request: HttpRequest, game: str, board: str, player: str) -> HttpResponse:
        cfg, _, window, pk, reply = self.located(request, WindowQuerySerializer, _friends_read)
        rows, degraded = selectors.friends_ranked(cfg, window=window, pk=pk, reply=reply)
        return json_response(friends_body(cfg, game, board, window, player, rows, degraded), allow=ALLOW)


def _standing_read(
    cfg: BoardConfig,
    window: str,
    q: dict[str, Any],
    pk: int,
    counters: list[str],
    limits: list[int],
    token: selectors.TokenGuard | None,
) -> list[Any]:
    return selectors.standing_reply(
        cfg, window=window, pk=pk, around=q["around"], counters=counters, limits=limits, token=token
    )


def _friends_read(
    cfg: BoardConfig,
    window: str,
    q: dict[str, Any],
    pk: int,
    counters: list[str],
    limits: list[int],
    token: selectors.TokenGuard | None,
) -> list[Any]:
    # the friend list, the board and the profiles in one round trip (friends.lua)
    return selectors.friends_reply(
        cfg, window=window, members=[pk], counters=counters, limits=limits, own_list=True, token=token
    )


def standing_body(game: str, board: str, window: str, player: str, standing: PlayerStanding) -> dict[str, Any]:
    """The body of GET .../players/{player} (PlayerOutSerializer documents it)."""
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
    if me is not None and me.subscores is not None:
        body["subscores"] = me.subscores
    if not standing.rank_exact:
        body["rank_error"] = standing.rank_error
    if standing.degraded:
        body["degraded"] = True
    return body


def friends_body(
    cfg: BoardConfig,
    game: str,
    board: str,
    window: str,
    player: str,
    rows: list[selectors.FriendRow],
    degraded: bool,
) -> dict[str, Any]:
    """The body of GET .../players/{player}/friends (FriendsOutSerializer documents it),
    written straight from selectors.friends_ranked's tuples (a friend costs one dict here)."""
    decode = encoding.value_decoder(cfg)
    entries = [
        {
            "rank": rank,
            "board_rank": board_rank,
            "player": p.external_id,
            "display_name": p.display_name,
            "score": decode(encoded),
            "metadata": p.metadata,
        }
        for rank, board_rank, _, _, encoded, p in rows
    ]
    if cfg.subscores:
        for entry, (_, _, _, _, encoded, _) in zip(entries, rows, strict=True):
            entry["subscores"] = encoding.decode_subscores(cfg, encoded)
    body = {"game": game, "board": board, "window": window, "player": player, "entries": entries, "rank_exact": True}
    if degraded:
        body["degraded"] = True
    return body
