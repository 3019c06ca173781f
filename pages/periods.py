"""Words for windows: a window's name ("Season 1", "Week 48, 2026"), its dates in the board's
(or region's) time zone, and the countdown to the current window's reset."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from scores import windows
from scores.windows import SeasonSpan

WINDOW_LABELS = {
    "all": "All time",
    "daily": "Today",
    "weekly": "This week",
    "monthly": "This month",
    "season": "Season",
    "last7d": "Last 7 days",
    "last30d": "Last 30 days",
}
_KIND_NAMES = {"daily": "Day", "weekly": "Week", "monthly": "Month", "season": "Season"}


def window_label(window: str, season_names: dict[str, str] | None = None) -> str:
    """ "Day 2026-11-28", "Week 2026-W48", "Season 1" (the season's name), "All time"."""
    kind, _, rest = window.partition(":")
    if kind == "season" and season_names and rest in season_names:
        return season_names[rest]
    return f"{_KIND_NAMES.get(kind, kind)} {rest}" if rest else WINDOW_LABELS.get(window, window)


def _local(moment: datetime, zone: ZoneInfo) -> str:
    local = moment.astimezone(zone)
    day = f"{local.day} {local:%b %Y}"
    return day if (local.hour, local.minute) == (0, 0) else f"{day}, {local:%H:%M}"


def window_dates(window: str, tz: str, seasons: tuple[SeasonSpan, ...]) -> str:
    """The window's span in the board's time zone: "28 Nov 2026", "23 Nov – 29 Nov 2026",
    "1 Nov 2026 – 1 Feb 2027" (a season: its first and first-after instants); "" for all time."""
    window = windows.split_region(window)[1]
    if window == "all" or window in windows.ROLLING_WINDOWS:
        return ""
    try:
        span = windows.bounds(window, tz, seasons)
    except windows.UnknownWindow:
        return ""
    if span is None:
        return ""
    start, end = span
    zone = ZoneInfo(tz)
    if windows.kind_of(window) == "season":
        return f"{_local(start, zone)} – {_local(end, zone)}"
    first, last = start.astimezone(zone), (end - timedelta(seconds=1)).astimezone(zone)
    if first.date() == last.date():
        return f"{first.day} {first:%b %Y}"
    return f"{first.day} {first:%b} – {last.day} {last:%b %Y}"


@dataclass(frozen=True)
class Reset:
    """When the current window ends and the next one begins."""

    at: datetime  # UTC
    tz: str
    verb: str  # "Resets" (a day, week, month) or "Ends" (a season)
    local: str  # "00:00 Europe/Paris" or "1 Feb 2027, 01:00 Europe/Paris"
    left: str  # "5 h 12 min", at render time (static/js/live.js keeps it ticking)

    @property
    def iso(self) -> str:
        return self.at.isoformat().replace("+00:00", "Z")


def countdown(seconds: float) -> str:
    """3 d 4 h, 5 h 12 min 30 s, 4 min 09 s, 9 s (static/js/format.js words it the same for the ticking pages)."""
    s = max(0, int(seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes:02d} min {s:02d} s"
    if minutes:
        return f"{minutes} min {s:02d} s"
    return f"{s} s"


def reset_of(window: str, tz: str, seasons: tuple[SeasonSpan, ...], now: datetime) -> Reset | None:
    """The reset of a current window (None for all time and rolling windows)."""
    base = windows.split_region(window)[1]
    if base == "all" or base in windows.ROLLING_WINDOWS:
        return None
    span = windows.bounds(window, tz, seasons)
    if span is None or span[1] <= now:
        return None
    end = span[1]
    zone = ZoneInfo(tz)
    local = end.astimezone(zone)
    is_season = windows.kind_of(base) == "season"
    when = f"{local:%H:%M} {tz}" if not is_season and end - now < timedelta(days=1) else f"{_local(end, zone)} {tz}"
    return Reset(end, tz, "Ends" if is_season else "Resets", when, countdown((end - now).total_seconds()))
