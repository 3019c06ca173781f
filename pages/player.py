"""What a player's page shows (`/games/{game}/players/{player}/`): per board, their rank, score
and percentile in each current window, and their results newest first, marked when held or
voided and when they set (or count toward) a current value. Visible to the player, their
friends and staff, as the API's player reads (docs/api.md §5)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from boards import selectors
from pages.periods import WINDOW_LABELS
from scores import encoding, windows
from scores.models import Match
from scores.selectors import BoardConfig, GameConfig, player_result_counts, player_results, player_values

RESULTS_PER_BOARD = 10  # on the overview; one board's own list pages by RESULTS_PAGE
RESULTS_PAGE = 50


@dataclass(frozen=True)
class WindowStanding:
    kind: str
    label: str
    window: str
    rank: int | None
    score: int | None
    percentile: float | None
    total: int
    subs: tuple[int, ...] = ()  # the value's sub-scores in declared order (docs/api.md §2.3)


@dataclass(frozen=True)
class ResultRow:
    match_id: str
    ended_at: datetime
    status: str  # accepted, held (waits for a moderator), voided
    score: int
    sets: list[str]  # labels of the current windows whose value this result set (or counts in)
    subs: tuple[int, ...] = ()  # the result's sub-scores in declared order


@dataclass(frozen=True)
class BoardSection:
    board: BoardConfig
    standings: list[WindowStanding]
    results: list[ResultRow]
    count: int  # all their results on the board
    page: int
    pages: int

    @property
    def total_mode(self) -> bool:
        return self.board.mode == "total"


@dataclass(frozen=True)
class PlayerPage:
    game_slug: str
    game_name: str
    player: str
    display_name: str
    is_me: bool
    sections: list[BoardSection]
    only_board: str  # "" on the overview


def _current(cfg: BoardConfig, now: datetime) -> list[tuple[str, str]]:
    out = []
    for kind in cfg.windows:
        try:
            out.append((kind, windows.resolve(kind, now, cfg.reset_timezone, cfg.windows, cfg.seasons)))
        except windows.UnknownWindow:  # "season" between seasons
            continue
    return out


def _label(kind: str, window: str, config: GameConfig) -> str:
    if kind == "season":
        slug = window.split(":", 1)[1]
        return config.season_names.get(slug, WINDOW_LABELS["season"])
    return WINDOW_LABELS.get(kind, kind)


def player_page_read(
    *,
    config: GameConfig,
    pk: int,
    external_id: str,
    display_name: str,
    is_me: bool,
    only_board: str,
    page: int,
    now: datetime,
) -> PlayerPage:
    counts = player_result_counts(pk)
    boards = [b for b in config.boards.values() if not only_board or b.slug == only_board]
    current = {b.id: _current(b, now) for b in boards}
    values = player_values(pk, pairs=[(b.id, w) for b in boards for _, w in current[b.id]])
    sections = []
    for cfg in boards:
        standings = []
        for kind, window in current[cfg.id]:
            s = selectors.player_standing(cfg, window=window, pk=pk, around=0)
            me = s.me
            standings.append(
                WindowStanding(
                    kind,
                    _label(kind, window, config),
                    window,
                    me.rank if me else None,
                    me.value if me else None,
                    s.percentile,
                    s.total,
                    tuple(me.subscores.values()) if me and me.subscores else (),
                )
            )
        per_page = RESULTS_PAGE if only_board else RESULTS_PER_BOARD
        count = counts.get(cfg.id, 0)
        pages = max(1, -(-count // per_page))
        number = min(max(page, 1), pages) if only_board else 1
        rows = []
        for r in player_results(pk, board_id=cfg.id, offset=(number - 1) * per_page, limit=per_page):
            subs = tuple(encoding.decode_subpart(cfg, r.subpart).values()) if cfg.subscores else ()
            sets = []
            if r.status == Match.Status.ACCEPTED:
                counted = set(windows.windows_for(r.ended_at, cfg.reset_timezone, cfg.windows, cfg.seasons))
                for kind, window in current[cfg.id]:
                    value = values.get((cfg.id, window))
                    if value is None or window not in counted:
                        continue
                    score, reached_at, encoded = value
                    # the whole tuple: a result of the same score with other sub-scores did not set it
                    same_subs = not cfg.subscores or encoding.decode_subscores(cfg, encoded) == encoding.decode_subpart(
                        cfg, r.subpart
                    )
                    if cfg.mode == "total" or ((score, reached_at) == (r.score, r.ended_at) and same_subs):
                        sets.append(_label(kind, window, config))
            rows.append(ResultRow(r.match_id, r.ended_at, r.status, r.score, sets, subs))
        sections.append(BoardSection(cfg, standings, rows, count, number, pages))
    return PlayerPage(config.game.slug, config.game.name, external_id, display_name, is_me, sections, only_board)
