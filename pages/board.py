"""What a board page shows, read through the apps' selectors: which window it is
(`Where`), its rows, the signed-in player's card and friends, a searched player, the chart.
pages/views.py parses the request, calls `board_page_read` and renders `BoardPage`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.http import HttpRequest

from boards import histogram, selectors
from pages.chart import Chart, chart_build
from scores import windows
from scores.models import Game
from scores.selectors import BoardConfig, player_names, player_search
from seasons import selectors as frozen
from seasons.models import WindowFreeze

PAGE_SIZE = 100
# The public API pages the top down to offset 10,000 (limit 100): a position beyond it is
# shown on the pages only to the player, their friends and staff, as the API allows.
PUBLIC_DEPTH = 10_000 + 100
MAX_PAGE = PUBLIC_DEPTH // PAGE_SIZE
AROUND = 2
SEARCH_LIMIT = 20
PAST_LOOKBACK = 14  # earlier windows of each kind offered in the picker

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


# --- which window ------------------------------------------------------------------------------


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


def where_read(request: HttpRequest, cfg: BoardConfig, now: datetime) -> Where | str:
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
    found.update(frozen.frozen_window_names(cfg.id, per_kind=PAST_LOOKBACK * 4, region=where.region))
    out: list[str] = []
    for kind in ("daily", "weekly", "monthly", "season"):
        out += sorted((w for w in found if windows.kind_of(w) == kind), reverse=True)
    return out


def window_label(window: str) -> str:
    kind, _, rest = window.partition(":")
    names = {"daily": "Day", "weekly": "Week", "monthly": "Month", "season": "Season"}
    return f"{names.get(kind, kind)} {rest}" if rest else WINDOW_LABELS.get(window, window)


def page_number(raw: str | None) -> int:
    try:
        return min(max(int(raw or 1), 1), MAX_PAGE)
    except ValueError:
        return 1


# --- standings -------------------------------------------------------------------------------


def may_read(request: HttpRequest, viewer_pk: int | None, pk: int) -> bool:
    """The API's rule for reading one player (boards.api.PlayerReadApi): staff, the player, a friend."""
    if getattr(request.user, "is_staff", False) or viewer_pk == pk:
        return True
    return viewer_pk is not None and viewer_pk in selectors.friend_pks(pk)


def _live_card(cfg: BoardConfig, window: str, pk: int, me_pk: int | None) -> Card:
    standing = selectors.player_standing(cfg, window, pk, AROUND)
    me = standing.me
    if me is None:
        name = player_names(pk)
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


def _frozen_card(freeze: WindowFreeze, pk: int, me_pk: int | None) -> Card:
    rows = frozen.standings_around(freeze, player_pk=pk, around=AROUND)
    mine = next((s for s in rows if s.player_id == pk), None)
    if mine is None:
        name = player_names(pk)
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


def _friends(cfg: BoardConfig, window: str, freeze: WindowFreeze | None, me_pk: int) -> list[Row]:
    if freeze is not None:
        found = frozen.standings_of(freeze, player_pks=[me_pk, *selectors.friend_pks(me_pk)])
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


def mine_read(cfg: BoardConfig, where: Where, me_pk: int | None) -> tuple[Card | None, list[Row] | None]:
    """The signed-in player's rank card and friends' board (None, None for anyone else)."""
    if me_pk is None:
        return None, None
    freeze = where.freeze
    card = _frozen_card(freeze, me_pk, me_pk) if freeze else _live_card(cfg, where.window, me_pk, me_pk)
    return card, _friends(cfg, where.window, freeze, me_pk)


# --- the page --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paging:
    number: int
    pages: int
    prev: int | None
    next: int | None


@dataclass(frozen=True)
class BoardPage:
    """Everything board.html shows."""

    game: Game
    board: BoardConfig
    where: Where
    label: str  # "Day 2026-11-28 · EU"
    regions: list[tuple[str, str, bool]]  # (slug, label, active); empty on boards without regions
    tabs: list[tuple[str, str, bool]]  # (kind, label, active)
    past: list[tuple[str, str, bool]]  # (window, label, active)
    rows: list[Row]
    total: int
    degraded: bool
    paging: Paging
    card: Card | None
    friends: list[Row] | None
    q: str
    results: list[tuple[str, str]] | None
    focus: Card | None
    chart: Chart | None
    ws_path: str

    @property
    def here(self) -> str:
        return self.where.query()

    @property
    def region_q(self) -> str:
        return "&" + urlencode({"region": self.where.region}) if self.where.region else ""

    @property
    def live(self) -> bool:
        return self.where.is_current

    @property
    def me_player(self) -> str:
        return self.card.player if self.card else ""

    @property
    def last_rank(self) -> int | None:
        return self.rows[-1].rank if self.rows else None


def _focus(request: HttpRequest, cfg: BoardConfig, where: Where, me_pk: int | None, total: int) -> Card | None:
    focus_id = (request.GET.get("player") or "").strip()[:64]
    if not focus_id:
        return None
    pk = selectors.player_pk(cfg.game_id, focus_id)
    if pk is None:
        return Card(focus_id, "", None, None, None, total, [], hidden=False)
    focus = _frozen_card(where.freeze, pk, me_pk) if where.freeze else _live_card(cfg, where.window, pk, me_pk)
    if focus.rank is not None and focus.rank > PUBLIC_DEPTH and not may_read(request, me_pk, pk):
        return Card(focus.player, focus.display_name, None, None, None, total, [], hidden=True)
    return focus


def board_page_read(
    request: HttpRequest, *, game: Game, cfg: BoardConfig, where: Where, me_pk: int | None, now: datetime
) -> BoardPage:
    page_no = page_number(request.GET.get("page"))
    offset = (page_no - 1) * PAGE_SIZE
    degraded = False
    freeze = where.freeze
    if freeze is not None:
        standings = frozen.standings_page(freeze, offset, PAGE_SIZE)
        total = freeze.entries
        rows = [
            Row(s.rank, s.player.external_id, s.player.display_name, s.value, me=s.player_id == me_pk)
            for s in standings
        ]
    else:
        top = selectors.board_top(cfg, where.window, offset, PAGE_SIZE)
        total, degraded = top.total, top.degraded
        rows = [_row(e, me_pk) for e in top.entries]

    card, friends = mine_read(cfg, where, me_pk)
    q = (request.GET.get("q") or "").strip()[:64]
    results = player_search(cfg.game_id, q=q, limit=SEARCH_LIMIT) if q else None
    focus = _focus(request, cfg, where, me_pk, total)

    chart = None
    if freeze is None:
        marker = card.score if card and card.score is not None else (focus.score if focus else None)
        chart = chart_build(histogram.histogram_read(cfg, where.window), marker, cfg.order)

    plain_window = windows.split_region(where.window)[1]
    regions = [("", "Global", not where.region)] + [
        (r.slug, r.slug.upper(), r.slug == where.region) for r in cfg.regions
    ]
    pages = max(1, min(math.ceil(total / PAGE_SIZE), MAX_PAGE))
    past = _past_windows(cfg, now, game.retention_periods, where)
    ws_query = {"window": where.spec if where.is_current else plain_window}
    if where.region:
        ws_query["region"] = where.region
    return BoardPage(
        game=game,
        board=cfg,
        where=where,
        label=window_label(plain_window) + (f" · {where.region.upper()}" if where.region else ""),
        regions=regions if cfg.regions else [],
        tabs=[(kind, label, w == where.window) for kind, label, w in where.current],
        past=[(w, window_label(w), w == plain_window) for w in past],
        rows=rows,
        total=total,
        degraded=degraded,
        paging=Paging(page_no, pages, page_no - 1 if page_no > 1 else None, page_no + 1 if page_no < pages else None),
        card=card,
        friends=friends,
        q=q,
        results=results,
        focus=focus,
        chart=chart,
        ws_path=f"/ws/games/{cfg.game_slug}/boards/{cfg.slug}/?{urlencode(ws_query)}",
    )
