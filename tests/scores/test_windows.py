from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scores import windows
from scores.windows import SeasonSpan, UnknownWindow

ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Pacific/Kiritimati", "Asia/Kathmandu"]
S1 = SeasonSpan("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC))
ALL = ("all", "daily", "weekly", "monthly", "season")


@given(
    st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC)),
    st.sampled_from(ZONES),
)
def test_a_moment_lies_inside_the_bounds_of_each_of_its_windows(moment, tz) -> None:
    for window in windows.windows_for(moment, tz, ALL, [S1]):
        span = windows.bounds(window, tz, [S1])
        if span is not None:
            start, end = span
            assert start <= moment < end, (window, moment, tz)


@given(st.dates(min_value=date(2020, 1, 1), max_value=date(2035, 1, 1)), st.sampled_from(ZONES))
def test_consecutive_days_tile_time_without_gaps(day, tz) -> None:
    today = windows.bounds(windows.daily_key(day), tz, [])
    tomorrow = windows.bounds(windows.daily_key(day + timedelta(days=1)), tz, [])
    assert today[1] == tomorrow[0]
    hours = (today[1] - today[0]).total_seconds() / 3600
    assert 22.5 <= hours <= 25  # DST days are 23 or 25 hours (Lord Howe shifts by 30 min)


def test_late_arrival_counts_for_the_day_it_ended() -> None:
    ended = datetime(2026, 11, 29, 22, 59, 58, tzinfo=UTC)  # 23:59:58 in Paris
    assert "daily:2026-11-29" in windows.windows_for(ended, "Europe/Paris", ALL, [])
    assert "daily:2026-11-30" in windows.windows_for(ended + timedelta(seconds=5), "Europe/Paris", ALL, [])


def test_iso_week_53_and_year_end() -> None:
    # 2026-12-31 is a Thursday: ISO week 2026-W53; 2027-01-01 is still in it
    assert windows.weekly_key(date(2026, 12, 31)) == "weekly:2026-W53"
    assert windows.weekly_key(date(2027, 1, 3)) == "weekly:2026-W53"
    assert windows.weekly_key(date(2027, 1, 4)) == "weekly:2027-W01"
    assert windows.monthly_key(date(2027, 1, 1)) == "monthly:2027-01"


def test_dst_change_day_in_new_york() -> None:
    start, end = windows.bounds("daily:2026-03-08", "America/New_York", [])
    assert (end - start) == timedelta(hours=23)
    assert start.astimezone(ZoneInfo("America/New_York")).hour == 0


def test_season_window_only_inside_the_season() -> None:
    assert "season:s1" in windows.windows_for(S1.starts_at, "UTC", ALL, [S1])
    assert "season:s1" not in windows.windows_for(S1.ends_at, "UTC", ALL, [S1])
    assert "season:s1" not in windows.windows_for(S1.starts_at - timedelta(seconds=1), "UTC", ALL, [S1])


@pytest.mark.parametrize(
    "spec, explicit",
    [
        ("all", "all"),
        ("daily", "daily:2026-11-29"),
        ("weekly", "weekly:2026-W48"),
        ("monthly", "monthly:2026-11"),
        ("season", "season:s1"),
        ("daily:2026-11-28", "daily:2026-11-28"),
        ("weekly:2026-W53", "weekly:2026-W53"),
        ("season:s1", "season:s1"),
    ],
)
def test_resolve(spec, explicit) -> None:
    now = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    assert windows.resolve(spec, now, "UTC", ALL, [S1]) == explicit


@pytest.mark.parametrize(
    "spec", ["yearly", "daily:2026-02-30", "weekly:2025-W53", "monthly:2026-13", "season:s9", "daily:yesterday", ""]
)
def test_resolve_refuses_unknown_windows(spec) -> None:
    with pytest.raises(UnknownWindow):
        windows.resolve(spec, datetime(2026, 11, 29, tzinfo=UTC), "UTC", ALL, [S1])


def test_resolve_refuses_a_kind_the_board_does_not_keep() -> None:
    with pytest.raises(UnknownWindow):
        windows.resolve("daily", datetime(2026, 11, 29, tzinfo=UTC), "UTC", ("all",), [])
