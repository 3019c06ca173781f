"""The player web pages (HTML): games, a board's top list with its windows, search, the score
distribution, and for a signed-in player their rank card and friends' board. See docs/players.md.

Thin, like the API views: parse the query, call the same selectors the API calls (boards,
seasons, histogram), render. Pages work without JavaScript; static/js/live.js adds the live
updates (contract section 9) on top of the server-rendered page."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import auth
from django.contrib.auth import views as auth_views
from django.db.models import Prefetch, QuerySet
from django.db.models.functions import Lower
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from boards import histogram, selectors
from scores import accounts, windows
from scores.demo import DEMO_SLUG, player_external_id
from scores.models import Board, Game, Player
from scores.selectors import BoardConfig, cached_board, cached_game, player_of_user
from seasons import selectors as frozen
from seasons.models import Standing, WindowFreeze

PAGE_SIZE = 100
# The public API pages the top down to offset 10,000 (limit 100): a position beyond it is
# shown on the pages only to the player, their friends and staff, as the API allows.
PUBLIC_DEPTH = 10_000 + 100
MAX_PAGE = PUBLIC_DEPTH // PAGE_SIZE
AROUND = 2
SEARCH_LIMIT = 20
PAST_LOOKBACK = 14  # earlier windows of each kind offered in the picker
CHART_BARS = 40
CHART_W, CHART_H = 600, 150

WINDOW_LABELS = {
    "all": "All time",
    "daily": "Today",
    "weekly": "This week",
    "monthly": "This month",
    "season": "Season",
    "last7d": "Last 7 days",
    "last30d": "Last 30 days",
}


@dataclass(frozen=True)
class Row:
    rank: int
    player: str
    display_name: str
    score: int
    board_rank: int | None = None  # friends' board: the rank on the whole board
    me: bool = False


@dataclass(frozen=True)
class Card:
    """A player's standing: the "your rank" card, or a searched player's."""

    player: str
    display_name: str
    rank: int | None
    score: int | None
    percentile: float | None
    total: int
    around: list[Row]
    hidden: bool = False  # ranked deeper than the public pages, and not the viewer's to see


def _row(e: selectors.Entry, me_pk: int | None) -> Row:
    return Row(e.rank, e.external_id, e.display_name, e.value, me=e.player_id == me_pk)


def _not_found(request: HttpRequest, message: str, status: int = 404) -> HttpResponse:
    return render(request, "pages/not_found.html", {"message": message, "status": status}, status=status)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _control_characters(request: HttpRequest) -> str | None:
    """The first query parameter holding a control character (a NUL cannot even reach
    Postgres in a text value): such a page is a 400, never a search for it."""
    return next((name for name, values in request.GET.lists() if any(_CONTROL.search(v) for v in values)), None)


# --- frozen standings: small reads next to seasons.selectors (same tables and indexes) -------


def _frozen_window_names(board_id: int, per_kind: int, region: str = "") -> list[str]:
    """The board's windows (of `region`'s board, without its prefix) with frozen standings, the
    newest `per_kind` of each kind. A board gains a few hundred a year (per region), so one
    DISTINCT over its (board, window, version) index."""
    names = list(
        WindowFreeze.objects.filter(board_id=board_id).order_by("window").values_list("window", flat=True).distinct()
    )
    prefix = f"{region}/" if region else ""
    out: list[str] = []
    for kind in ("daily", "weekly", "monthly", "season"):
        out += [w[len(prefix) :] for w in names if w.startswith(prefix + kind + ":")][-per_kind:]
    return out


def _standings_around(freeze: WindowFreeze, pk: int, around: int) -> list[Standing]:
    position = Standing.objects.filter(freeze=freeze, player_id=pk).values_list("position", flat=True).first()
    if position is None:
        return []
    return list(
        Standing.objects.filter(freeze=freeze, position__gte=position - around, position__lte=position + around)
        .select_related("player")
        .order_by("position")
    )


def _standings_of(freeze: WindowFreeze, pks: list[int]) -> list[Standing]:
    return list(Standing.objects.filter(freeze=freeze, player_id__in=pks).select_related("player").order_by("position"))


# --- index ------------------------------------------------------------------------------------


def index(request: HttpRequest) -> HttpResponse:
    games = Game.objects.order_by("name").prefetch_related(Prefetch("boards", queryset=Board.objects.order_by("id")))
    return render(request, "pages/index.html", {"games": games})


def game_page(request: HttpRequest, game: str) -> HttpResponse:
    found, boards = cached_game(game)
    if found is None:
        return _not_found(request, f"There is no game {game!r}.")
    return render(request, "pages/game.html", {"game": found, "boards": list(boards.values())})


# --- a board ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """Which board window a page (or a fragment of it) shows, from its `?window=` and `?region=`."""

    spec: str  # as asked: "all", "daily", "daily:2026-11-27" (without the region)
    region: str  # a region's slug, "" for the global board
    tz: str  # where the board's (or region's) windows roll over
    window: str  # the explicit window read, with its region prefix: "eu/daily:2026-11-28"
    current: list[tuple[str, str, str]]  # (kind, label, explicit window) of the current windows
    is_current: bool
    freeze: WindowFreeze | None  # frozen standings of an ended window, if any

    def query(self, **extra: str | int) -> str:
        """The page's own query string (window, region) plus `extra`, for links."""
        params: dict[str, str | int] = {"window": self.spec}
        if self.region:
            params["region"] = self.region
        return urlencode({**params, **extra})


def _where(request: HttpRequest, cfg: BoardConfig, now: datetime) -> Where | str:
    """The board window the request asks for, or why there is none (a 404's message)."""
    region = (request.GET.get("region") or "").strip()[:64]
    tz = cfg.reset_timezone
    if region:
        found = cfg.region(region)
        if found is None:
            return f"Board {cfg.slug!r} has no region {region!r}."
        tz = found.timezone
    spec = (request.GET.get("window") or "all").strip()[:64]
    try:
        window = windows.resolve(spec, now, tz, cfg.windows, cfg.seasons)
    except windows.UnknownWindow:
        return f"This board has no window {spec!r}."
    if region:
        window = windows.in_region(region, window)
    current = _current_windows(cfg, now, tz, region)
    is_current = window in {w for _, _, w in current}
    freeze = None if is_current else frozen.latest_freeze(cfg.id, window)
    return Where(spec, region, tz, window, current, is_current, freeze)


def _current_windows(cfg: BoardConfig, now: datetime, tz: str, region: str) -> list[tuple[str, str, str]]:
    """(kind, label, explicit window) of the board's current windows, in its configured order."""
    out = []
    for kind in cfg.windows:
        try:
            window = windows.resolve(kind, now, tz, cfg.windows, cfg.seasons)
        except windows.UnknownWindow:  # "season" between seasons
            continue
        out.append((kind, WINDOW_LABELS.get(kind, kind), windows.in_region(region, window) if region else window))
    return out


def _past_windows(cfg: BoardConfig, now: datetime, retention: int, where: Where) -> list[str]:
    """Earlier windows a visitor can open (without the region prefix: the region is a parameter
    of its own): those with frozen standings and those whose sorted set is still retained,
    newest first per kind."""
    found: set[str] = set()
    for kind in ("daily", "weekly", "monthly", "season"):
        if kind in cfg.windows:
            lookback = min(max(retention, 1), PAST_LOOKBACK)
            found.update(windows.ended_windows(kind, now, where.tz, cfg.seasons, lookback))
    found.update(_frozen_window_names(cfg.id, PAST_LOOKBACK * 4, where.region))
    out: list[str] = []
    for kind in ("daily", "weekly", "monthly", "season"):
        out += sorted((w for w in found if windows.kind_of(w) == kind), reverse=True)
    return out


def _window_label(window: str) -> str:
    kind, _, rest = window.partition(":")
    names = {"daily": "Day", "weekly": "Week", "monthly": "Month", "season": "Season"}
    return f"{names.get(kind, kind)} {rest}" if rest else WINDOW_LABELS.get(window, window)


def _page_number(raw: str | None) -> int:
    try:
        return min(max(int(raw or 1), 1), MAX_PAGE)
    except ValueError:
        return 1


def _may_read(request: HttpRequest, viewer_pk: int | None, pk: int) -> bool:
    """The API's rule for reading one player (boards.api.PlayerReadApi): staff, the player, a friend."""
    if getattr(request.user, "is_staff", False) or viewer_pk == pk:
        return True
    return viewer_pk is not None and viewer_pk in selectors.friend_pks(pk)


def _live_card(cfg: BoardConfig, window: str, pk: int, me_pk: int | None) -> Card:
    standing = selectors.player_standing(cfg, window, pk, AROUND)
    me = standing.me
    if me is None:
        name = Player.objects.filter(pk=pk).values_list("external_id", "display_name").first() or ("", "")
        return Card(name[0], name[1], None, None, None, standing.total, [])
    return Card(
        me.external_id,
        me.display_name,
        me.rank,
        me.value,
        standing.percentile,
        standing.total,
        [_row(e, me_pk) for e in standing.around],
    )


def _frozen_card(freeze: Any, pk: int, me_pk: int | None) -> Card:
    rows = _standings_around(freeze, pk, AROUND)
    mine = next((s for s in rows if s.player_id == pk), None)
    if mine is None:
        name = Player.objects.filter(pk=pk).values_list("external_id", "display_name").first() or ("", "")
        return Card(name[0], name[1], None, None, None, freeze.entries, [])
    total = freeze.entries
    percentile = math.floor((total - mine.rank + 1) * 10000 / total) / 100 if total else None
    return Card(
        mine.player.external_id,
        mine.player.display_name,
        mine.rank,
        mine.value,
        percentile,
        total,
        [Row(s.rank, s.player.external_id, s.player.display_name, s.value, me=s.player_id == me_pk) for s in rows],
    )


def name_matches(game_id: int, q: str) -> QuerySet[Player]:
    """Players of a game whose display name starts with `q`, any case (index player_name_prefix)."""
    return (
        Player.objects.annotate(lname=Lower("display_name"))
        .filter(game_id=game_id, lname__startswith=q.lower())
        .order_by()
    )


def _search(game_id: int, q: str) -> list[tuple[str, str]]:
    """Players whose id is `q`, then those whose display name starts with `q` (any case):
    two index lookups (player_unique_id_per_game, player_name_prefix), at most SEARCH_LIMIT."""
    exact = list(Player.objects.filter(game_id=game_id, external_id=q).values_list("external_id", "display_name"))
    # No ORDER BY: a pattern-ops index cannot serve one, and sorting every match of a short
    # prefix would read them all; the first SEARCH_LIMIT in index order are sorted here.
    by_name = name_matches(game_id, q).values_list("external_id", "display_name")[:SEARCH_LIMIT]
    seen = {e for e, _ in exact}
    found = sorted((r for r in by_name if r[0] not in seen), key=lambda r: (r[1].lower(), r[0]))
    return (exact + found)[:SEARCH_LIMIT]


def _chart(hist: histogram.Histogram, marker: int | None, order: str) -> dict[str, Any] | None:
    """The histogram as SVG bars of equal value width. Stored buckets are quantiles (about
    equal counts each), so each bucket's count is spread over the bars its range covers."""
    buckets = [b for b in hist.buckets if b.count]
    if not buckets:
        return None
    lo, hi = buckets[0].min, buckets[-1].max
    if hi - lo < 10:  # a handful of values: widen the axis so one value is not one wall-to-wall bar
        lo, hi = lo - 5, hi + 5
    span = hi - lo + 1
    bars = min(CHART_BARS, span)
    width = span / bars
    counts = [0.0] * bars
    for b in buckets:
        if b.count == 1:
            # a bucket starts at a real player's value (its lowest encoded score: the lowest value
            # on desc boards, the highest on asc): one player in it is there (small boards)
            known = (b.min if hist.order == "desc" else b.max) - lo
            counts[min(int(known // width), bars - 1)] += 1
            continue
        b_lo, b_hi = b.min - lo, b.max - lo + 1
        first, last = int(b_lo // width), min(int((b_hi - 1e-9) // width), bars - 1)
        for i in range(first, last + 1):
            overlap = min(b_hi, (i + 1) * width) - max(b_lo, i * width)
            counts[i] += b.count * overlap / (b_hi - b_lo)
    top = max(counts) or 1.0
    bar_w = CHART_W / bars
    rects = []
    for i, c in enumerate(counts):
        h = round(c / top * (CHART_H - 22), 1)  # headroom for the marker's label
        value_lo = round(lo + i * width)
        value_hi = round(lo + (i + 1) * width) - 1
        rects.append(
            {
                "x": round(i * bar_w + 0.5, 1),
                "y": round(CHART_H - h, 1),
                "w": round(max(bar_w - 1, 0.5), 1),
                "h": h,
                "title": f"{value_lo:,}–{max(value_hi, value_lo):,}: about {round(c):,} players",
            }
        )
    chart: dict[str, Any] = {
        "w": CHART_W,
        "h": CHART_H,
        "bars": rects,
        "lo": lo,
        "hi": hi,
        "mid": lo + span // 2,
        "mid_x": CHART_W // 2,
        "total": hist.total,
        "refreshed_at": hist.refreshed_at,
        "better": "higher is better" if order == "desc" else "lower is better",
    }
    if marker is not None and lo <= marker <= hi:
        chart["marker_x"] = round((marker - lo + 0.5) / span * CHART_W, 1)
        chart["marker_value"] = marker
        chart["marker_right"] = chart["marker_x"] > CHART_W * 0.7  # label on the line's left
    return chart


def board_page(request: HttpRequest, game: str, board: str) -> HttpResponse:
    cfg = cached_board(game, board)
    if cfg is None:
        return _not_found(request, f"There is no board {board!r} in game {game!r}.")
    if (name := _control_characters(request)) is not None:
        return _not_found(request, f"The {name!r} parameter holds a control character.", status=400)
    game_obj = cached_game(game)[0]
    now = timezone.now()
    where = _where(request, cfg, now)
    if isinstance(where, str):
        return _not_found(request, where)
    window, freeze = where.window, where.freeze

    me_pk = player_of_user(request.user.id, cfg.game_id) if request.user.is_authenticated else None
    if request.GET.get("part") == RANK_CARD_PART:
        return _rank_card_part(request, cfg, where, me_pk)

    page_no = _page_number(request.GET.get("page"))
    offset = (page_no - 1) * PAGE_SIZE
    degraded = False
    if freeze is not None:
        standings = frozen.standings_page(freeze, offset, PAGE_SIZE)
        total = freeze.entries
        rows = [
            Row(s.rank, s.player.external_id, s.player.display_name, s.value, me=s.player_id == me_pk)
            for s in standings
        ]
    else:
        page = selectors.board_top(cfg, window, offset, PAGE_SIZE)
        total, degraded = page.total, page.degraded
        rows = [_row(e, me_pk) for e in page.entries]

    card, friends = _mine(cfg, where, me_pk)

    q = (request.GET.get("q") or "").strip()[:64]
    results = _search(cfg.game_id, q) if q else None

    focus = None
    focus_id = (request.GET.get("player") or "").strip()[:64]
    if focus_id:
        pk = selectors.player_pk(cfg.game_id, focus_id)
        if pk is None:
            focus = Card(focus_id, "", None, None, None, total, [], hidden=False)
        else:
            focus = _frozen_card(freeze, pk, me_pk) if freeze else _live_card(cfg, window, pk, me_pk)
            if focus.rank is not None and focus.rank > PUBLIC_DEPTH and not _may_read(request, me_pk, pk):
                focus = Card(focus.player, focus.display_name, None, None, None, total, [], hidden=True)

    chart = None
    if freeze is None:
        marker = card.score if card and card.score is not None else (focus.score if focus else None)
        chart = _chart(histogram.histogram_read(cfg, window), marker, cfg.order)

    plain_window = windows.split_region(window)[1]
    regions = [("", "Global", not where.region)] + [
        (r.slug, r.slug.upper(), r.slug == where.region) for r in cfg.regions
    ]
    pages = max(1, min(math.ceil(total / PAGE_SIZE), MAX_PAGE))
    past = _past_windows(cfg, now, game_obj.retention_periods, where)
    ws_query = {"window": where.spec if where.is_current else plain_window}
    if where.region:
        ws_query["region"] = where.region
    context = {
        "game": game_obj,
        "board": cfg,
        "spec": where.spec,
        "region": where.region,
        "here": where.query(),
        "region_q": "&" + urlencode({"region": where.region}) if where.region else "",
        "regions": regions if cfg.regions else [],
        "window": window,
        "window_label": _window_label(plain_window) + (f" · {where.region.upper()}" if where.region else ""),
        "tabs": [(kind, label, w == window) for kind, label, w in where.current],
        "past": [(w, _window_label(w), w == plain_window) for w in past],
        "is_current": where.is_current,
        "frozen": freeze,
        "rows": rows,
        "last_rank": rows[-1].rank if rows else None,
        "public_depth": PUBLIC_DEPTH,
        "total": total,
        "degraded": degraded,
        "page": page_no,
        "pages": pages,
        "prev_page": page_no - 1 if page_no > 1 else None,
        "next_page": page_no + 1 if page_no < pages else None,
        "card": card,
        "friends": friends,
        "q": q,
        "results": results,
        "focus": focus,
        "chart": chart,
        "live": where.is_current,
        "ws_path": f"/ws/games/{cfg.game_slug}/boards/{cfg.slug}/?{urlencode(ws_query)}",
        "me_player": card.player if card else "",
    }
    return render(request, "pages/board.html", context)


def _mine(cfg: BoardConfig, where: Where, me_pk: int | None) -> tuple[Card | None, list[Row] | None]:
    """The signed-in player's rank card and friends' board (None, None for anyone else)."""
    if me_pk is None:
        return None, None
    freeze = where.freeze
    card = _frozen_card(freeze, me_pk, me_pk) if freeze else _live_card(cfg, where.window, me_pk, me_pk)
    return card, _friends(cfg, where.window, freeze, me_pk)


RANK_CARD_PART = "rank-card"


def _rank_card_part(request: HttpRequest, cfg: BoardConfig, where: Where, me_pk: int | None) -> HttpResponse:
    """`?part=rank-card`: the signed-in player's own rank card and friends' board, as the full
    page renders them, for static/js/live.js to swap in when a `rank` or `passed` message
    arrives (the message carries only the rank and score; the percentile and the neighbours
    come from here). Only ever the session's own player, whatever else the query says; anyone
    else (anonymous, or a user who does not play this game) gets 204 and no body."""
    card, friends = _mine(cfg, where, me_pk)
    if card is None:
        response = HttpResponse(status=204)
    else:
        response = render(
            request,
            "pages/_rank_card_part.html",
            {"card": card, "friends": friends, "public_depth": PUBLIC_DEPTH},
        )
    response["Cache-Control"] = "private, no-store"
    return response


def _friends(cfg: BoardConfig, window: str, freeze: Any, me_pk: int) -> list[Row]:
    if freeze is not None:
        found = _standings_of(freeze, [me_pk, *selectors.friend_pks(me_pk)])
        return [
            Row(i + 1, s.player.external_id, s.player.display_name, s.value, board_rank=s.rank, me=s.player_id == me_pk)
            for i, s in enumerate(found)
        ]
    board = selectors.friends_board(cfg, window, me_pk)
    return [
        Row(
            f.rank,
            f.entry.external_id,
            f.entry.display_name,
            f.entry.value,
            board_rank=f.board_rank,
            me=f.entry.player_id == me_pk,
        )
        for f in board.entries
    ]


# --- sign-in ----------------------------------------------------------------------------------


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        demo = cached_game(DEMO_SLUG)[0]
        if demo is not None:
            context["demo_username"] = player_external_id(1)
            context["demo_password"] = accounts.DEMO_PASSWORD
        return context


@require_http_methods(["GET", "POST"])
def login_link(request: HttpRequest, token: str) -> HttpResponse:
    """A game's one-time login link: GET shows what it will do, POST (with CSRF) redeems it."""
    try:
        target = accounts.login_link_read(token)
    except accounts.LoginLinkError as exc:
        return render(request, "pages/login_link.html", {"error": exc}, status=400)
    player = Player.objects.select_related("game").filter(pk=target.player_pk).first()
    if request.method == "GET":
        return render(request, "pages/login_link.html", {"player": player, "expires_at": target.expires_at})
    try:
        user, player = accounts.login_link_redeem(token=token, user=request.user)
    except accounts.LoginLinkError as exc:
        status = 409 if exc.code in ("used", "conflict") else 400
        return render(request, "pages/login_link.html", {"error": exc, "player": player}, status=status)
    if not request.user.is_authenticated or request.user.pk != user.pk:
        auth.login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    first_board = next(iter(cached_game(player.game.slug)[1].values()), None)
    if first_board is None:
        return redirect(reverse("pages-game", args=[player.game.slug]))
    return redirect(reverse("pages-board", args=[player.game.slug, first_board.slug]))
