"""What a board page shows, read through the apps' selectors: which window it is
(`Where`), its rows, the signed-in player's card and friends, a searched player, the chart.
pages/views.py parses the request, calls `board_page_read` and renders `BoardPage`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.http import HttpRequest
from django.urls import reverse

from boards import cursor, histogram, selectors
from boards.profiles import friend_pks, player_pk
from boards.types import BoardEntry
from pages.chart import Chart, chart_build
from pages.periods import Reset, reset_of, window_dates, window_label
from pages.where import Where, past_windows
from scores import encoding, windows
from scores.models import Game
from scores.selectors import BoardConfig, GameConfig, player_names, player_search
from seasons import selectors as frozen
from seasons.models import FrozenStanding, WindowFreeze

PAGE_SIZE = 100
# The public API pages the top down to offset 10,000 (limit 100): a position beyond it is
# shown on the pages only to the player, their friends and staff, as the API allows.
PUBLIC_DEPTH = 10_000 + 100
MAX_PAGE = PUBLIC_DEPTH // PAGE_SIZE
AROUND = 2
SEARCH_LIMIT = 20


@dataclass(frozen=True)
class Row:
    rank: int
    player: str
    display_name: str
    score: int
    board_rank: int | None = None  # friends' board: the rank on the whole board
    me: bool = False
    subs: tuple[int, ...] = ()  # the value's sub-scores, in the board's declared order


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
    position: int | None = None  # 0-based place in the board's order (which page holds it)
    subs: tuple[int, ...] = ()  # the value's sub-scores, in the board's declared order

    @property
    def page(self) -> int | None:
        """The board page that lists this player, if it is within the pages' depth."""
        if self.position is None or self.position >= PUBLIC_DEPTH:
            return None
        return self.position // PAGE_SIZE + 1


@dataclass(frozen=True)
class Hit:
    """A search result with the player's standing in the page's window."""

    player: str
    display_name: str
    rank: int | None
    score: int | None
    hidden: bool  # ranked deeper than the public pages, and not the viewer's to see


@dataclass(frozen=True)
class Search:
    q: str
    hits: list[Hit]
    count: int  # players matching, counted up to a cap
    more: bool  # more than `count` match


def _row(e: BoardEntry, me_pk: int | None) -> Row:
    subs = tuple(e.subscores.values()) if e.subscores else ()
    return Row(e.rank, e.external_id, e.display_name, e.value, me=e.player_id == me_pk, subs=subs)


def _frozen_subs(cfg: BoardConfig, encoded: int) -> tuple[int, ...]:
    return tuple(encoding.decode_subscores(cfg, encoded).values()) if cfg.subscores else ()


def _frozen_row(cfg: BoardConfig, s: FrozenStanding, me_pk: int | None) -> Row:
    """A frozen standing as a row, ranked as it was frozen."""
    name = s.player.display_name
    return Row(s.rank, s.player.external_id, name, s.value, me=s.player_id == me_pk, subs=_frozen_subs(cfg, s.encoded))


def _cursor(raw: str | None) -> cursor.Cursor | None:
    """A `?cursor=` the pages handed out; anything else reads as the first page."""
    try:
        return cursor.cursor_decode(raw) if raw else None
    except cursor.BadCursor:
        return None


def page_number(raw: str | None) -> int:
    try:
        return min(max(int(raw or 1), 1), MAX_PAGE)
    except ValueError:
        return 1


# --- standings -------------------------------------------------------------------------------


def may_read(request: HttpRequest, *, viewer_pk: int | None, pk: int) -> bool:
    """The API's rule for reading one player (boards.api.PlayerReadApi): staff, the player, a friend."""
    if getattr(request.user, "is_staff", False) or viewer_pk == pk:
        return True
    return viewer_pk is not None and viewer_pk in friend_pks(pk)


def _live_card(cfg: BoardConfig, window: str, pk: int, me_pk: int | None) -> Card:
    standing = selectors.player_standing(cfg, window=window, pk=pk, around=AROUND)
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
        position=me.position,
        subs=tuple(me.subscores.values()) if me.subscores else (),
    )


def _frozen_card(cfg: BoardConfig, freeze: WindowFreeze, pk: int, me_pk: int | None) -> Card:
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
        [_frozen_row(cfg, s, me_pk) for s in rows],
        position=mine.position - 1,
        subs=_frozen_subs(cfg, mine.encoded),
    )


def _friends(cfg: BoardConfig, window: str, freeze: WindowFreeze | None, me_pk: int) -> list[Row]:
    if freeze is not None:
        found = frozen.standings_of(freeze, player_pks=[me_pk, *friend_pks(me_pk)])
        return [
            Row(
                i + 1,
                s.player.external_id,
                s.player.display_name,
                s.value,
                board_rank=s.rank,
                me=s.player_id == me_pk,
                subs=_frozen_subs(cfg, s.encoded),
            )
            for i, s in enumerate(found)
        ]
    board = selectors.friends_board(cfg, window=window, pk=me_pk)
    return [
        Row(
            f.rank,
            f.entry.external_id,
            f.entry.display_name,
            f.entry.value,
            board_rank=f.board_rank,
            me=f.entry.player_id == me_pk,
            subs=tuple(f.entry.subscores.values()) if f.entry.subscores else (),
        )
        for f in board.entries
    ]


def mine_read(cfg: BoardConfig, *, where: Where, me_pk: int | None) -> tuple[Card | None, list[Row] | None]:
    """The signed-in player's rank card and friends' board (None, None for anyone else)."""
    if me_pk is None:
        return None, None
    freeze = where.freeze
    card = _frozen_card(cfg, freeze, me_pk, me_pk) if freeze else _live_card(cfg, where.window, me_pk, me_pk)
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
    label: str  # "Day 2026-11-28 · EU", "Season 1"
    dates: str  # the window's span in its time zone ("" for all time)
    reset: Reset | None  # when a current window resets
    regions: list[tuple[str, str, bool]]  # (slug, label, active); empty on boards without regions
    tabs: list[tuple[str, str, bool]]  # (kind, label, active)
    past: list[tuple[str, str, bool]]  # (window, label, active)
    rows: list[Row]
    total: int
    degraded: bool
    paging: Paging
    card: Card | None
    friends: list[Row] | None
    search: Search | None
    focus: Card | None
    chart: Chart | None
    ws_path: str
    me_url: str  # the signed-in player's own page
    focus_url: str  # the searched player's page, when the viewer may open it
    first_frozen_at: datetime | None  # a corrected (re-frozen) window's first freeze
    # past the offset pages (rank 10,100): the next 100 by cursor (docs/reads.md, "Deep paging")
    next_cursor: str | None = None
    deep: bool = False  # this page was read by cursor

    @property
    def q(self) -> str:
        return self.search.q if self.search else ""

    @property
    def score_head(self) -> str:
        return "Time" if self.board.format == "duration_ms" else "Score"

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
    pk = player_pk(cfg.game_id, external_id=focus_id)
    if pk is None:
        return Card(focus_id, "", None, None, None, total, [], hidden=False)
    focus = _frozen_card(cfg, where.freeze, pk, me_pk) if where.freeze else _live_card(cfg, where.window, pk, me_pk)
    if focus.rank is not None and focus.rank > PUBLIC_DEPTH and not may_read(request, viewer_pk=me_pk, pk=pk):
        return Card(focus.player, focus.display_name, None, None, None, total, [], hidden=True)
    return focus


def _search(request: HttpRequest, cfg: BoardConfig, where: Where, me_pk: int | None) -> Search | None:
    """`?q=`: matching players with their rank and score in this window (hidden, as on the
    API, for strangers ranked deeper than the public pages)."""
    q = (request.GET.get("q") or "").strip()[:64]
    if not q:
        return None
    found = player_search(cfg.game_id, q=q, limit=SEARCH_LIMIT)
    pks = [pk for pk, _, _ in found.players]
    if where.freeze is not None:
        standing = {s.player_id: (s.rank, s.value) for s in frozen.standings_of(where.freeze, player_pks=pks)}
    else:
        standing = {
            pk: (e.rank, e.value) for pk, e in selectors.standings_of(cfg, window=where.window, pks=pks).items()
        }
    hits = []
    for pk, ext, name in found.players:
        rank, score = standing.get(pk, (None, None))
        hidden = rank is not None and rank > PUBLIC_DEPTH and not may_read(request, viewer_pk=me_pk, pk=pk)
        hits.append(Hit(ext, name, None if hidden else rank, None if hidden else score, hidden))
    return Search(q, hits, found.count, found.more)


def board_page_read(
    request: HttpRequest,
    *,
    game: Game,
    config: GameConfig,
    cfg: BoardConfig,
    where: Where,
    me_pk: int | None,
    now: datetime,
) -> BoardPage:
    page_no = page_number(request.GET.get("page"))
    offset = (page_no - 1) * PAGE_SIZE
    degraded = False
    freeze = where.freeze
    after = _cursor(request.GET.get("cursor")) if freeze is None else None
    more = None
    if freeze is not None:
        standings = frozen.standings_page(freeze, offset=offset, limit=PAGE_SIZE)
        total = freeze.entries
        rows = [_frozen_row(cfg, s, me_pk) for s in standings]
    else:
        if after is None:
            top = selectors.board_top(cfg, window=where.window, offset=offset, limit=PAGE_SIZE)
        else:
            top = cursor.board_after(cfg, window=where.window, cursor=after, limit=PAGE_SIZE)
        total, degraded = top.total, top.degraded
        rows = [_row(e, me_pk) for e in top.entries]
        if after is not None or page_no == MAX_PAGE:
            more = cursor.next_cursor(top)

    card, friends = mine_read(cfg, where=where, me_pk=me_pk)
    search = _search(request, cfg, where, me_pk)
    focus = _focus(request, cfg, where, me_pk, total)

    chart = None
    if freeze is None:
        marker = card.score if card and card.score is not None else (focus.score if focus else None)
        if page_no == 1 and after is None:
            best = rows[0].score if rows else None
        else:
            first = selectors.board_top(cfg, window=where.window, offset=0, limit=1).entries
            best = first[0].value if first else None
        hist = histogram.histogram_read(cfg, where.window)
        chart = chart_build(hist, marker, cfg.order, best=best, fmt=cfg.format)

    plain_window = windows.split_region(where.window)[1]
    regions = [("", "Global", not where.region)] + [
        (r.slug, r.slug.upper(), r.slug == where.region) for r in cfg.regions
    ]
    pages = max(1, min(math.ceil(total / PAGE_SIZE), MAX_PAGE))
    past = past_windows(cfg, now=now, retention=game.retention_periods, where=where)
    ws_query = {"window": where.spec if where.is_current else plain_window}
    if where.region:
        ws_query["region"] = where.region
    return BoardPage(
        game=game,
        board=cfg,
        where=where,
        label=window_label(plain_window, config.season_names) + (f" · {where.region.upper()}" if where.region else ""),
        dates=window_dates(plain_window, where.tz, cfg.seasons),
        reset=reset_of(where.window, where.tz, cfg.seasons, now) if where.is_current else None,
        regions=regions if cfg.regions else [],
        tabs=[(kind, _tab_label(kind, label, w, config), w == where.window) for kind, label, w in where.current],
        past=[(w, window_label(w, config.season_names), w == plain_window) for w in past],
        rows=rows,
        total=total,
        degraded=degraded,
        paging=Paging(page_no, pages, page_no - 1 if page_no > 1 else None, page_no + 1 if page_no < pages else None)
        if after is None
        else Paging(MAX_PAGE + 1, MAX_PAGE, None, None),
        card=card,
        friends=friends,
        search=search,
        focus=focus,
        chart=chart,
        ws_path=f"/ws/games/{cfg.game_slug}/boards/{cfg.slug}/?{urlencode(ws_query)}",
        me_url=_player_url(cfg, card.player) if card else "",
        focus_url=_player_url(cfg, focus.player)
        if focus and focus.rank and _focus_readable(request, cfg, me_pk, focus)
        else "",
        first_frozen_at=frozen.first_frozen_at(freeze) if freeze is not None and freeze.version > 1 else None,
        next_cursor=more,
        deep=after is not None,
    )


def _tab_label(kind: str, label: str, window: str, config: GameConfig) -> str:
    """A tab's label: the running season's name on the season tab."""
    if kind == "season":
        return window_label(windows.split_region(window)[1], config.season_names)
    return label


def _player_url(cfg: BoardConfig, external_id: str) -> str:
    return reverse("pages-player", args=[cfg.game_slug, external_id])


def _focus_readable(request: HttpRequest, cfg: BoardConfig, me_pk: int | None, focus: Card) -> bool:
    pk = player_pk(cfg.game_id, external_id=focus.player)
    return pk is not None and may_read(request, viewer_pk=me_pk, pk=pk)
