"""A board's season archive (`/games/{game}/boards/{board}/archive/`): its ended seasons and
every frozen window, each with its winner, when it was frozen, whether a later void corrected
it (a new standings version), and for a signed-in player their final position. Each links to
the board page of that window, which lists the final standings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pages.periods import window_dates, window_label
from scores import windows
from scores.selectors import BoardConfig, GameConfig
from seasons import selectors as frozen
from seasons.models import FrozenStanding, WindowFreeze

KIND_TITLES = {"season": "Seasons", "monthly": "Months", "weekly": "Weeks", "daily": "Days"}


@dataclass(frozen=True)
class ArchiveItem:
    window: str  # without the region prefix
    label: str
    dates: str
    freeze: WindowFreeze | None  # None: ended, final standings not frozen yet
    first_frozen_at: datetime | None
    winner: FrozenStanding | None
    mine: FrozenStanding | None

    @property
    def corrected(self) -> bool:
        return self.freeze is not None and self.freeze.version > 1


@dataclass(frozen=True)
class ArchivePage:
    game_slug: str
    game_name: str
    board: BoardConfig
    region: str
    groups: list[tuple[str, list[ArchiveItem]]]  # (title, items), seasons first
    signed_in_player: bool


def archive_read(*, config: GameConfig, cfg: BoardConfig, region: str, me_pk: int | None, now: datetime) -> ArchivePage:
    tz = cfg.reset_timezone if not region else next(r.timezone for r in cfg.regions if r.slug == region)
    archived = frozen.archived_windows(cfg.id, region=region)
    ids = [a.latest.id for a in archived]
    winners = frozen.standings_at(ids, position=1)
    mine = frozen.standings_at(ids, player_pk=me_pk) if me_pk is not None else {}
    items: dict[str, list[ArchiveItem]] = {kind: [] for kind in KIND_TITLES}
    seen = set()
    for a in archived:
        kind = windows.kind_of(a.window)
        if kind not in items:
            continue
        seen.add(a.window)
        items[kind].append(
            ArchiveItem(
                a.window,
                window_label(a.window, config.season_names),
                window_dates(a.window, tz, cfg.seasons),
                a.latest,
                a.first_frozen_at,
                winners.get(a.latest.id),
                mine.get(a.latest.id),
            )
        )
    if "season" in cfg.windows:  # ended seasons whose standings are not final yet
        for season in windows.ended_windows("season", now, tz, cfg.seasons, 0):
            if season not in seen:
                label = window_label(season, config.season_names)
                items["season"].insert(
                    0, ArchiveItem(season, label, window_dates(season, tz, cfg.seasons), None, None, None, None)
                )
    groups = [(KIND_TITLES[k], v) for k, v in items.items() if v]
    return ArchivePage(config.game.slug, config.game.name, cfg, region, groups, me_pk is not None)
