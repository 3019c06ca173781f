"""The player web pages (HTML): games, a board's top list with its windows, search, the score
distribution, and for a signed-in player their rank card and friends' board. See docs/players.md.

Thin, like the API views: parse the query, call the same selectors the API calls (boards,
seasons, histogram) through pages/board.py, render. Pages work without JavaScript;
static/js/live.js adds the live updates (contract section 9) on top of the server-rendered page."""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from pages import board as board_read
from scores.models import Board, Game
from scores.selectors import BoardConfig, cached_board, cached_game, player_of_user

RANK_CARD_PART = "rank-card"


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "pages/not_found.html", {"message": message}, status=404)


def index(request: HttpRequest) -> HttpResponse:
    games = Game.objects.order_by("name").prefetch_related(Prefetch("boards", queryset=Board.objects.order_by("id")))
    return render(request, "pages/index.html", {"games": games})


def game_page(request: HttpRequest, game: str) -> HttpResponse:
    found, boards = cached_game(game)
    if found is None:
        return not_found(request, f"There is no game {game!r}.")
    return render(request, "pages/game.html", {"game": found, "boards": list(boards.values())})


def board_page(request: HttpRequest, game: str, board: str) -> HttpResponse:
    cfg = cached_board(game, board)
    if cfg is None:
        return not_found(request, f"There is no board {board!r} in game {game!r}.")
    game_obj = cached_game(game)[0]
    now = timezone.now()
    where = board_read.where_read(request, cfg, now)
    if isinstance(where, str):
        return not_found(request, where)
    me_pk = player_of_user(request.user.id, cfg.game_id) if request.user.is_authenticated else None
    if request.GET.get("part") == RANK_CARD_PART:
        return _rank_card_part(request, cfg, where, me_pk)
    page = board_read.board_page_read(request, game=game_obj, cfg=cfg, where=where, me_pk=me_pk, now=now)
    return render(request, "pages/board.html", {"p": page, "public_depth": board_read.PUBLIC_DEPTH})


def _rank_card_part(request: HttpRequest, cfg: BoardConfig, where: board_read.Where, me_pk: int | None) -> HttpResponse:
    """`?part=rank-card`: the signed-in player's own rank card and friends' board, as the full
    page renders them, for static/js/live.js to swap in when a `rank` or `passed` message
    arrives (the message carries only the rank and score; the percentile and the neighbours
    come from here). Only ever the session's own player, whatever else the query says; anyone
    else (anonymous, or a user who does not play this game) gets 204 and no body."""
    card, friends = board_read.mine_read(cfg, where, me_pk)
    if card is None:
        response = HttpResponse(status=204)
    else:
        response = render(
            request,
            "pages/_rank_card_part.html",
            {"card": card, "friends": friends, "public_depth": board_read.PUBLIC_DEPTH},
        )
    response["Cache-Control"] = "private, no-store"
    return response
