"""What a tournament is (docs/api.md §12.1, docs/competitions.md): the `[boards.tournament]` table
of a board, parsed for scores/config.py (registered in CompetitionsConfig.ready()), and read
back from the board's stored settings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from scores import windows
from scores.selectors import BoardConfig

_KEYS = {"starts_at", "ends_at", "join_required", "max_size", "max_attempts"}
STATES = ("active", "upcoming", "ended")


@dataclass(frozen=True)
class Tournament:
    starts_at: datetime
    ends_at: datetime
    join_required: bool
    max_size: int  # 0: unlimited
    max_attempts: int  # per player per period; 0: unlimited
    period_kind: str  # what max_attempts counts over: "daily", "weekly" (recurring) or "all"

    def state(self, now: datetime) -> str:
        if now < self.starts_at:
            return "upcoming"
        return "active" if now < self.ends_at else "ended"

    def period(self, board: BoardConfig, ended_at: datetime) -> str:
        """The window a result's attempt counts in: the day or week of a recurring tournament
        (in the game's time zone), else the whole tournament."""
        if self.period_kind == "all":
            return "all"
        return windows.windows_for(ended_at, board.reset_timezone, [self.period_kind], ())[0]


def tournament_of(board: BoardConfig) -> Tournament | None:
    t = board.tournament
    if t is None:
        return None
    kind = next((k for k in ("daily", "weekly") if k in board.windows), "all")
    return Tournament(
        starts_at=datetime.fromisoformat(t["starts_at"]),
        ends_at=datetime.fromisoformat(t["ends_at"]),
        join_required=bool(t["join_required"]),
        max_size=int(t["max_size"]),
        max_attempts=int(t["max_attempts"]),
        period_kind=kind,
    )


def tournament_parse(table: Any) -> dict[str, Any]:
    """The table's settings as JSON values; raises ValueError((key, message)) naming the key."""
    if not isinstance(table, dict):
        raise ValueError("", "a table is required: [boards.tournament] or tournament = { ... }")
    for key in table:
        if key not in _KEYS:
            raise ValueError(key, f"unknown key (expected one of: {', '.join(sorted(_KEYS))})")
    starts_at = _instant(table, "starts_at")
    ends_at = _instant(table, "ends_at")
    if ends_at <= starts_at:
        raise ValueError("ends_at", "must be after starts_at")
    join_required = table.get("join_required", False)
    if not isinstance(join_required, bool):
        raise ValueError("join_required", "true or false")
    return {
        "starts_at": starts_at.isoformat(),
        "ends_at": ends_at.isoformat(),
        "join_required": join_required,
        "max_size": _count(table, "max_size"),
        "max_attempts": _count(table, "max_attempts"),
    }


def _count(table: dict[str, Any], key: str) -> int:
    value = table.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(key, "an integer is required")
    if value < 0:
        raise ValueError(key, "must be at least 0 (0: unlimited)")
    if value > 2**31 - 1:
        raise ValueError(key, f"must be at most {2**31 - 1}")
    return value


def _instant(table: dict[str, Any], key: str) -> datetime:
    value = table.get(key)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            value = None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValueError(key, "an RFC 3339 date-time with an offset is required")
    return value.astimezone(UTC)
