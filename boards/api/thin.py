"""The thin path of the hot player reads (docs/reads.md, "The thin path"): a player's bearer
token reading its own standing or its own friends board, on a board served by one Redis.

Such a read is answered here without DRF's per-request machinery (the Request wrapper, the
authentication classes tried in turn, the throttle and permission objects, the renderer): the
token's signature is checked from this process's cache, its revocation (docs/api.md §3.2) and
the rate limits in the board script's own round trip, and the body is the same dict the DRF
view builds, written by json_bytes.
Anything else, and anything unusual about these (another player, a signature, a sharded board
or a cluster, odd parameters, Redis unreachable), returns None and the DRF view answers as
before, so every error and every degraded answer keeps its one implementation.
tests/boards/test_thin_reads.py holds the two paths' answers to the same bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from rest_framework import exceptions

from boards import index, selectors
from boards.api.common import (
    PlayerQuerySerializer,
    WindowQuerySerializer,
    entry_body,
    friend_entry_body,
    json_bytes,
    plain_query,
    resolved_window,
)
from boards.profiles import player_pk_cached
from boards.throttles import PlayerReadThrottle
from boards.types import FriendsBoard, PlayerStanding
from leaderboard_project.errors import exception_handler
from rediskit.client import REDIS_DOWN
from scores import encoding
from scores.auth import PlayerPrincipal, player_from_token
from scores.selectors import BoardConfig, cached_board

ALLOW = "GET, HEAD, OPTIONS"  # what DRF's APIView says of these views
JSON = "application/json"


class _Throttled:
    """What PlayerReadThrottle reads of a request: the principal and the client address."""

    def __init__(self, user: PlayerPrincipal, request: HttpRequest) -> None:
        self.user = user
        self.META = request.META  # the client address is read from it (PlayerReadThrottle.get_ident)


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


def friends_body(game: str, board: str, window: str, player: str, friends: FriendsBoard) -> dict[str, Any]:
    """The body of GET .../players/{player}/friends (FriendsOutSerializer documents it)."""
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
    return body


def friends_rows_body(
    cfg: BoardConfig, game: str, board: str, window: str, player: str, rows: list[selectors.FriendRow]
) -> dict[str, Any]:
    """friends_body of selectors.friends_rows' tuples: the same dict, key for key (a friend
    costs one dict here, not two entry objects and a dict)."""
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
    return {"game": game, "board": board, "window": window, "player": player, "entries": entries, "rank_exact": True}


def json_response(body: dict[str, Any], status: int = 200) -> HttpResponse:
    response = HttpResponse(json_bytes(body), content_type=JSON, status=status)
    response["Allow"] = ALLOW
    return response


def _own_read(request: HttpRequest, game: str, board: str, player: str) -> tuple[PlayerPrincipal, BoardConfig] | None:
    """The token's principal and the board when a player token reads its own pages on a board
    of one Redis; None for anything else."""
    meta = request.META
    header = meta.get("HTTP_AUTHORIZATION", "")
    if not header.startswith("Bearer ") or "HTTP_X_KEY_ID" in meta or "HTTP_X_SIGNATURE" in meta:
        return None  # a signed request is the server key's (DRF tries that first)
    # revocation is checked by the board script, in the read's own round trip (_counted)
    user = player_from_token(header[len("Bearer ") :].strip(), check_revoked=False)
    if user is None:
        return None
    cfg = cached_board(game, board_slug=board)
    if cfg is None or cfg.game_id != user.game_id or index.fanout(cfg.shards):
        return None
    if user.external_id != player and player_pk_cached(cfg.game_id, external_id=player) != user.player_pk:
        return None
    return user, cfg


def _window(cfg: BoardConfig, q: dict[str, Any]) -> str | None:
    try:
        return resolved_window(cfg, q["window"], q.get("region"))
    except exceptions.APIException:
        return None


def _throttled(throttle: PlayerReadThrottle) -> HttpResponse:
    """The 429 exactly as the DRF view answers it (the project's error body, Retry-After)."""
    drf = exception_handler(exceptions.Throttled(throttle.wait()), {})
    assert drf is not None
    response = json_response(drf.data, status=drf.status_code)
    response["Retry-After"] = drf["Retry-After"]
    return response


def _counted(
    user: PlayerPrincipal, request: HttpRequest, read: Callable[[list[str], list[int]], list[Any]]
) -> tuple[list[Any] | None, HttpResponse | None]:
    """The script's reply with the rate limits counted in it, or the 429; (None, None) when
    Redis is unreachable (the DRF view then answers from Postgres) or the script did not
    confirm the token (revoked, or its generation not in Redis: the DRF view's authentication
    refuses it, or asks Postgres)."""
    throttle = PlayerReadThrottle()
    now = throttle.clock()
    limits, counters, args = throttle.counters(_Throttled(user, request), now)
    try:
        reply = read(counters, args)
    except (*REDIS_DOWN, selectors.TokenUnconfirmed):
        return None, None
    if limits and len(reply) == 1:
        throttle.verdict(limits, int(reply[0]), now)
        return None, _throttled(throttle)
    return reply, None


def standing(request: HttpRequest, game: str, board: str, player: str) -> HttpResponse | None:
    """GET .../players/{player} by the player's own token, or None."""
    own = _own_read(request, game, board, player)
    q = plain_query(PlayerQuerySerializer, request.GET) if own else None
    window = _window(own[1], q) if own and q else None
    if window is None:
        return None
    user, cfg = own
    pk, around = user.player_pk, q["around"]
    guard = (pk, user.generation)
    reply, refused = _counted(
        user,
        request,
        lambda counters, limits: selectors.standing_reply(
            cfg, window=window, pk=pk, around=around, counters=counters, limits=limits, token=guard
        ),
    )
    if refused is not None or reply is None:
        return refused
    found = selectors.player_standing(cfg, window=window, pk=pk, around=around, reply=reply)
    return json_response(standing_body(game, board, window, player, found))


def friends(request: HttpRequest, game: str, board: str, player: str) -> HttpResponse | None:
    """GET .../players/{player}/friends by the player's own token, or None."""
    own = _own_read(request, game, board, player)
    q = plain_query(WindowQuerySerializer, request.GET) if own else None
    window = _window(own[1], q) if own and q else None
    if window is None:
        return None
    user, cfg = own
    pk = user.player_pk
    guard = (pk, user.generation)
    # the friend list, the board and the profiles in one round trip (friends.lua)
    reply, refused = _counted(
        user,
        request,
        lambda counters, limits: selectors.friends_reply(
            cfg, window=window, members=[pk], counters=counters, limits=limits, own_list=True, token=guard
        ),
    )
    if refused is not None or reply is None:
        return refused
    rows = selectors.friends_rows(cfg, window=window, reply=reply)
    return json_response(friends_rows_body(cfg, game, board, window, player, rows))
