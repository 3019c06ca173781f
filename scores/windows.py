"""Window arithmetic: which explicit windows a match counts in, and what a window query means.

Explicit windows are strings: "all", "daily:2026-11-29", "weekly:2026-W48" (ISO week),
"monthly:2026-11", "season:<slug>". They are derived from a match's ended_at in the game's
reset time zone, never from the arrival time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

if TYPE_CHECKING:  # scores.selectors imports this module
    from scores.selectors import BoardConfig, GameConfig

CURRENT_WINDOWS = ("all", "daily", "weekly", "monthly", "season")
# Rolling windows are not written by ingest: a scheduled job builds them from the daily
# windows (boards/rolling.py). They need the board to keep "daily".
ROLLING_WINDOWS = {"last7d": 7, "last30d": 30}
WINDOW_KINDS = CURRENT_WINDOWS + tuple(ROLLING_WINDOWS)

# [0-9], not \d: \d also matches other scripts' digits, which int() reads ("daily:٢٠٢٦-11-29"
# would name 2026-11-29 by another string); fullmatch, as `$` lets a trailing newline through
_DAILY = re.compile(r"daily:([0-9]{4})-([0-9]{2})-([0-9]{2})")
_WEEKLY = re.compile(r"weekly:([0-9]{4})-W([0-9]{2})")
_MONTHLY = re.compile(r"monthly:([0-9]{4})-([0-9]{2})")
_SEASON = re.compile(r"season:([a-z0-9][a-z0-9-]{0,63})")
# The forms above as patterns, for the OpenAPI schema (docs/api.md §1.2): a window of another
# form is never a window (404), whatever the board keeps.
_EXPLICIT_FORMS = (
    r"daily:[0-9]{4}-[0-9]{2}-[0-9]{2}|weekly:[0-9]{4}-W[0-9]{2}|monthly:[0-9]{4}-[0-9]{2}"
    r"|season:[a-z0-9][a-z0-9-]{0,63}"
)
EXPLICIT_WINDOW_RE = rf"^(?:{_EXPLICIT_FORMS})$"
WINDOW_RE = rf"^(?:{'|'.join(WINDOW_KINDS)}|{_EXPLICIT_FORMS})$"


@dataclass(frozen=True)
class SeasonSpan:
    slug: str
    starts_at: datetime
    ends_at: datetime


class UnknownWindow(ValueError):
    pass


def daily_key(day: date) -> str:
    return f"daily:{day.isoformat()}"


def weekly_key(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"weekly:{year}-W{week:02d}"


def monthly_key(day: date) -> str:
    return f"monthly:{day.year}-{day.month:02d}"


def seasons_at(moment: datetime, seasons: Iterable[SeasonSpan]) -> list[SeasonSpan]:
    return [s for s in seasons if s.starts_at <= moment < s.ends_at]


def claim_seasons(moment: datetime, seasons: Iterable[SeasonSpan]) -> list[str | None]:
    """The seasons a player's region claim for a match is recorded under (None: outside every
    season); the first is the one its stored results are read back under."""
    return [s.slug for s in seasons_at(moment, seasons)] or [None]


def windows_for(ended_at: datetime, tz: str, kinds: Iterable[str], seasons: Iterable[SeasonSpan]) -> list[str]:
    """Every explicit window a result that ended at `ended_at` counts in."""
    local_day = ended_at.astimezone(ZoneInfo(tz)).date()
    out: list[str] = []
    for kind in kinds:
        if kind == "all":
            out.append("all")
        elif kind == "daily":
            out.append(daily_key(local_day))
        elif kind == "weekly":
            out.append(weekly_key(local_day))
        elif kind == "monthly":
            out.append(monthly_key(local_day))
        elif kind == "season":
            out.extend(f"season:{s.slug}" for s in seasons_at(ended_at, seasons))
    return out


def result_windows(config: GameConfig, board: BoardConfig, ended_at: datetime, region: str | None) -> list[str]:
    """The global windows of a result, and its region's on a regional board: the request side's
    and moderation's spelling of what the projector's fold derives in SQL
    (scores/projection/values.py; tests/scores/test_windows_sql.py keeps the two equal)."""
    found = windows_for(ended_at, config.game.reset_timezone, board.windows, config.seasons)
    if board.regions and region is not None:
        tz = config.regions[region].timezone
        found += [in_region(region, w) for w in windows_for(ended_at, tz, board.windows, config.seasons)]
    return found


def kind_of(window: str) -> str:
    return split_region(window)[1].split(":", 1)[0]


# Regional boards keep a board per region: its windows are the global window names behind
# the region's slug ("eu/daily:2026-11-29"), rolling over at the region's own midnight.


def in_region(region: str, window: str) -> str:
    return f"{region}/{window}"


def split_region(window: str) -> tuple[str | None, str]:
    if "/" in window:
        region, rest = window.split("/", 1)
        return region, rest
    return None, window


def resolve(spec: str, now: datetime, tz: str, kinds: Iterable[str], seasons: Iterable[SeasonSpan]) -> str:
    """Turn a window query parameter into the explicit window it means at `now`.

    Raises UnknownWindow for a malformed window, a kind the board does not keep, an
    impossible date or an unknown season."""
    kinds = set(kinds)
    seasons = list(seasons)
    kind = kind_of(spec)
    if kind not in WINDOW_KINDS or kind not in kinds:
        raise UnknownWindow(f"unknown window {spec!r}")
    if spec in ROLLING_WINDOWS:
        return spec
    if spec == "season":
        current = sorted(seasons_at(now, seasons), key=lambda s: s.starts_at)
        if not current:
            raise UnknownWindow("no season is running now")
        return f"season:{current[-1].slug}"  # of overlapping seasons, the one that began last
    if spec in CURRENT_WINDOWS:
        return windows_for(now, tz, [spec], seasons)[0]
    if not _is_valid_explicit(spec, {s.slug for s in seasons}):
        raise UnknownWindow(f"unknown window {spec!r}")
    return spec


def _is_valid_explicit(spec: str, season_slugs: set[str]) -> bool:
    try:
        if m := _DAILY.fullmatch(spec):
            date(int(m[1]), int(m[2]), int(m[3]))
            return True
        if m := _WEEKLY.fullmatch(spec):
            date.fromisocalendar(int(m[1]), int(m[2]), 1)
            return True
        if m := _MONTHLY.fullmatch(spec):
            date(int(m[1]), int(m[2]), 1)
            return True
    except ValueError:
        return False
    if m := _SEASON.fullmatch(spec):
        return m[1] in season_slugs
    return False


def bounds(window: str, tz: str, seasons: Iterable[SeasonSpan]) -> tuple[datetime, datetime] | None:
    """The [start, end) instants of an explicit window; None for "all". For a regional
    window, tz must be the region's."""
    window = split_region(window)[1]
    zone = ZoneInfo(tz)
    if window == "all":
        return None
    if m := _DAILY.fullmatch(window):
        first = date(int(m[1]), int(m[2]), int(m[3]))
        last = first + timedelta(days=1)
    elif m := _WEEKLY.fullmatch(window):
        first = date.fromisocalendar(int(m[1]), int(m[2]), 1)
        last = first + timedelta(days=7)
    elif m := _MONTHLY.fullmatch(window):
        first = date(int(m[1]), int(m[2]), 1)
        last = date(first.year + (first.month == 12), first.month % 12 + 1, 1)
    elif m := _SEASON.fullmatch(window):
        for s in seasons:
            if s.slug == m[1]:
                return s.starts_at, s.ends_at
        raise UnknownWindow(window)
    else:
        raise UnknownWindow(window)
    return _local_midnight(first, zone), _local_midnight(last, zone)


def _local_midnight(day: date, zone: ZoneInfo) -> datetime:
    # As a UTC instant: arithmetic on datetimes sharing a tzinfo is wall-clock arithmetic,
    # which would make a DST day look 24 hours long.
    return datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)


def expires_at(
    window: str, tz: str, seasons: Iterable[SeasonSpan], retention_periods: int, grace: timedelta
) -> datetime | None:
    """When a window's sorted set may go: `retention_periods` whole periods after the window
    ends (so the previous day stays readable through today), plus the close grace. None for
    windows that never end ("all") or are rebuilt on a schedule (rolling)."""
    base = split_region(window)[1]
    if base == "all" or base in ROLLING_WINDOWS:
        return None
    start, end = bounds(window, tz, seasons)
    try:
        return end + (end - start) * retention_periods + grace
    except OverflowError:  # a retention beyond year 9999 means "keep"
        return None


def ended_windows(kind: str, now: datetime, tz: str, seasons: Iterable[SeasonSpan], lookback: int) -> list[str]:
    """Explicit windows of a kind that ended before `now`, the most recent `lookback` of them
    (every ended season for "season")."""
    if kind == "season":
        return [f"season:{s.slug}" for s in seasons if s.ends_at <= now]
    today = now.astimezone(ZoneInfo(tz)).date()
    out: list[str] = []
    if kind == "daily":
        out = [daily_key(today - timedelta(days=i)) for i in range(1, lookback + 1)]
    elif kind == "weekly":
        out = [weekly_key(today - timedelta(weeks=i)) for i in range(1, lookback + 1)]
    elif kind == "monthly":
        first = today.replace(day=1)
        for _ in range(lookback):
            first = (first - timedelta(days=1)).replace(day=1)
            out.append(monthly_key(first))
    return out
