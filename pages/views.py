"""The player web pages (HTML): games, a board's top list with its windows, search, the score
distribution, and for a signed-in player their rank card and friends' board. See docs/players.md.

Thin, like the API views: parse the query, call the same selectors the API calls (boards,
seasons, histogram) through pages/board.py, render. Pages work without JavaScript;
static/js/live.js adds the live updates (docs/api.md §9) on top of the server-rendered page."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.staticfiles import finders
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from leaderboard_project.replicas import replica_reads
from pages import board as board_read
from pages import competitions
from pages.archive import archive_read
from pages.player import player_page_read
from pages.where import Where, where_read
from scores.models import Board, Game
from scores.selectors import (
    BoardConfig,
    cached_board,
    cached_game,
    cached_game_config,
    player_names,
    player_of_user,
    player_pk,
)

RANK_CARD_PART = "rank-card"


def not_found(request: HttpRequest, message: str, status: int = 404) -> HttpResponse:
    return render(request, "pages/not_found.html", {"message": message, "status": status}, status=status)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _control_characters(request: HttpRequest) -> str | None:
    """The first query parameter holding a control character (a NUL cannot even reach
    Postgres in a text value): such a page is a 400, never a search for it."""
    return next((name for name, values in request.GET.lists() if any(_CONTROL.search(v) for v in values)), None)


def index(request: HttpRequest) -> HttpResponse:
    games = Game.objects.order_by("name").prefetch_related(Prefetch("boards", queryset=Board.objects.order_by("id")))
    return render(request, "pages/index.html", {"games": games})


def game_page(request: HttpRequest, game: str) -> HttpResponse:
    found, boards = cached_game(game)
    if found is None:
        return not_found(request, f"There is no game {game!r}.")
    config = cached_game_config(game)
    tournaments = competitions.game_tournaments(config, now=timezone.now()) if config else []
    return render(
        request, "pages/game.html", {"game": found, "boards": list(boards.values()), "tournaments": tournaments}
    )


def board_page(request: HttpRequest, game: str, board: str) -> HttpResponse:
    cfg = cached_board(game, board_slug=board)
    if cfg is None:
        return not_found(request, f"There is no board {board!r} in game {game!r}.")
    if (name := _control_characters(request)) is not None:
        return not_found(request, f"The {name!r} parameter holds a control character.", status=400)
    config = cached_game_config(game)
    if config is None:
        return not_found(request, f"There is no game {game!r}.")
    now = timezone.now()
    where = where_read(request, cfg=cfg, now=now)
    if isinstance(where, str):
        return not_found(request, where)
    me_pk = player_of_user(request.user.id, game_id=cfg.game_id) if request.user.is_authenticated else None
    if request.GET.get("part") == RANK_CARD_PART:
        return _rank_card_part(request, cfg, where, me_pk)
    page = board_read.board_page_read(
        request, game=config.game, config=config, cfg=cfg, where=where, me_pk=me_pk, now=now
    )
    context = {
        "p": page,
        "public_depth": board_read.PUBLIC_DEPTH,
        "tournament": competitions.board_tournament(config, cfg, me_pk=me_pk, now=now),
        "league": competitions.my_league(cfg, window=where.window, me_pk=me_pk, now=now),
    }
    return render(request, "pages/board.html", context)


@require_POST
def tournament_join(request: HttpRequest, game: str, board: str) -> HttpResponse:
    """The tournament box's join button (a plain form: works without JavaScript; the CSRF
    middleware checks its token). Joins the signed-in player through the API's service, then
    back to the board page (303), whose tournament box says what happened."""
    cfg = cached_board(game, board_slug=board)
    if cfg is None or cfg.tournament is None:
        return not_found(request, f"There is no tournament {board!r} in game {game!r}.")
    back = reverse("pages-board", args=[game, board])
    if not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?{urlencode({'next': back})}")
    me_pk = player_of_user(request.user.id, game_id=cfg.game_id)
    if me_pk is None:
        messages.error(request, "Your account does not play this game, so it cannot join its tournaments.")
    else:
        outcome = competitions.tournament_join_for(
            cfg, me_pk=me_pk, me_external_id=player_names(me_pk)[0], now=timezone.now()
        )
        messages.add_message(request, getattr(messages, outcome.level.upper()), outcome.message)
    return _see_other(f"{back}#tournament")


def _see_other(url: str) -> HttpResponse:
    """303: the browser follows a POST's answer with a GET, so a reload never joins again."""
    response = HttpResponse(status=303)
    response["Location"] = url
    return response


def _rank_card_part(request: HttpRequest, cfg: BoardConfig, where: Where, me_pk: int | None) -> HttpResponse:
    """`?part=rank-card`: the signed-in player's own rank card and friends' board, as the full
    page renders them, for static/js/live.js to swap in when a `rank` or `passed` message
    arrives (the message carries only the rank and score; the percentile and the neighbours
    come from here). Only ever the session's own player, whatever else the query says; anyone
    else (anonymous, or a user who does not play this game) gets 204 and no body."""
    card, friends = board_read.mine_read(cfg, where=where, me_pk=me_pk)
    if card is None:
        response = HttpResponse(status=204)
    else:
        context = {
            "card": card,
            "friends": friends,
            "public_depth": board_read.PUBLIC_DEPTH,
            "fmt": cfg.format,
            "subs": cfg.subscores,
            "player_url": reverse("pages-player", args=[cfg.game_slug, card.player]),
        }
        response = render(request, "pages/_rank_card_part.html", context)
    response["Cache-Control"] = "private, no-store"
    return response


@replica_reads  # may lag a little: docs/operations.md, "Read replicas"
def player_page(request: HttpRequest, game: str, player: str) -> HttpResponse:
    """A player's results and ranks: for the player, their friends and staff (docs/api.md §5)."""
    config = cached_game_config(game)
    if config is None:
        return not_found(request, f"There is no game {game!r}.")
    pk = player_pk(config.game.id, external_id=player)
    if pk is None:
        return not_found(request, f"There is no player {player!r} in {config.game.name}.")
    if not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?{urlencode({'next': request.get_full_path()})}")
    me_pk = player_of_user(request.user.id, game_id=config.game.id)
    if not board_read.may_read(request, viewer_pk=me_pk, pk=pk):
        message = "A player's results are shown to the player, their friends and staff."
        return render(request, "pages/forbidden.html", {"message": message}, status=403)
    only = (request.GET.get("board") or "").strip()[:64]
    if only and only not in config.boards:
        return not_found(request, f"There is no board {only!r} in {config.game.name}.")
    external_id, display_name = player_names(pk)
    page = player_page_read(
        config=config,
        pk=pk,
        external_id=external_id,
        display_name=display_name,
        is_me=pk == me_pk,
        only_board=only,
        page=_positive(request.GET.get("page")),
        now=timezone.now(),
    )
    tournaments = competitions.player_tournaments(config, player_pk=pk, now=timezone.now())
    response = render(request, "pages/player.html", {"p": page, "tournaments": tournaments})
    response["Cache-Control"] = "private, no-store"
    return response


def _positive(raw: str | None) -> int:
    try:
        return min(max(int(raw or 1), 1), 1_000_000)
    except ValueError:
        return 1


@replica_reads
def archive_page(request: HttpRequest, game: str, board: str) -> HttpResponse:
    """A board's ended seasons and frozen windows."""
    config = cached_game_config(game)
    cfg = cached_board(game, board_slug=board)
    if config is None or cfg is None:
        return not_found(request, f"There is no board {board!r} in game {game!r}.")
    region = (request.GET.get("region") or "").strip()[:64]
    if region and cfg.region(region) is None:
        return not_found(request, f"Board {cfg.slug!r} has no region {region!r}.")
    me_pk = player_of_user(request.user.id, game_id=cfg.game_id) if request.user.is_authenticated else None
    page = archive_read(config=config, cfg=cfg, region=region, me_pk=me_pk, now=timezone.now())
    return render(request, "pages/archive.html", {"p": page})


@cache
def _favicon() -> bytes:
    found = finders.find("favicon.ico")
    return Path(found or Path(settings.BASE_DIR) / "static" / "favicon.ico").read_bytes()


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for whatever the page links."""
    response = HttpResponse(_favicon(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response
