"""Which board window a page shows: `?window=` and `?region=` resolved in the board's (or
the region's) time zone, the current windows for the tabs, the earlier ones for the picker."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.http import HttpRequest

from pages.periods import WINDOW_LABELS
from scores import windows
from scores.selectors import BoardConfig
from seasons import selectors as frozen
from seasons.models import WindowFreeze

PAST_LOOKBACK = 14  # earlier windows of each kind offered in the picker


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


def where_read(request: HttpRequest, *, cfg: BoardConfig, now: datetime) -> Where | str:
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
    freeze = None if is_current else frozen.latest_freeze(cfg.id, window=window)
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


def past_windows(cfg: BoardConfig, *, now: datetime, retention: int, where: Where) -> list[str]:
    """Earlier windows a visitor can open (without the region prefix: the region is a parameter
    of its own): those with frozen standings and those whose sorted set is still retained,
    newest first per kind, and the one the page shows, however old (a link to it keeps it
    selected in the picker)."""
    found: set[str] = {where.spec} if not where.is_current and ":" in where.spec else set()
    for kind in ("daily", "weekly", "monthly", "season"):
        if kind in cfg.windows:
            lookback = min(max(retention, 1), PAST_LOOKBACK)
            found.update(windows.ended_windows(kind, now, where.tz, cfg.seasons, lookback))
    found.update(frozen.frozen_window_names(cfg.id, per_kind=PAST_LOOKBACK * 4, region=where.region))
    out: list[str] = []
    for kind in ("daily", "weekly", "monthly", "season"):
        out += sorted((w for w in found if windows.kind_of(w) == kind), reverse=True)
    return out
