"""What the client sends and what it answers, as typed, immutable values (docs/api.md
§3.2, §4, §5, §9, §10). Every answer keeps the JSON it came from in `raw`, so a field the service adds
later is there before this package names it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from leaderboard_client.errors import ApiError

JSON = dict[str, Any]


def _instant(value: datetime | str) -> str:
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("ended_at needs a time zone (datetime.now(UTC), not datetime.now())")
    return value.isoformat().replace("+00:00", "Z")


def _parse_instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- what a game server sends --------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One player's result on one board."""

    player: str
    board: str
    score: int
    display_name: str | None = None
    metadata: JSON | None = None
    region: str | None = None
    subscores: dict[str, int] | None = None

    def to_json(self) -> JSON:
        out: JSON = {"player": self.player, "board": self.board, "score": self.score}
        for key in ("display_name", "metadata", "region", "subscores"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class Match:
    """A match and its results. `match_id` is the idempotency key: it is chosen once, when the
    Match is made (`Match.new` draws one), and every retry sends the same one."""

    match_id: str
    ended_at: datetime | str
    results: tuple[Result, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(self.results))

    @classmethod
    def new(cls, results: list[Result] | tuple[Result, ...], *, ended_at: datetime | str | None = None,
            match_id: str | None = None) -> Match:  # fmt: skip
        """A match ended now (or at `ended_at`) with a fresh random id (or `match_id`)."""
        return cls(
            match_id=match_id or f"m-{uuid.uuid4().hex}",
            ended_at=ended_at if ended_at is not None else datetime.now(UTC),
            results=tuple(results),
        )

    def to_json(self) -> JSON:
        return {"match_id": self.match_id, "ended_at": _instant(self.ended_at),
                "results": [r.to_json() for r in self.results]}  # fmt: skip


# --- answers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Submitted:
    """A match's answer: `accepted`, `held` (stored, not shown until a moderator approves), or,
    in a batch only, `rejected` with its `error`. `duplicate`: the service had it already."""

    match_id: str
    status: Literal["accepted", "held", "rejected"]
    duplicate: bool = False
    error: ApiError | None = None

    @property
    def ok(self) -> bool:
        return self.status != "rejected"


@dataclass(frozen=True)
class Entry:
    rank: int
    player: str
    display_name: str | None
    score: int
    metadata: JSON | None = None
    raw: JSON = field(default_factory=dict, compare=False, repr=False)
    subscores: dict[str, int] | None = None  # only on boards that declare sub-scores (docs/api.md §2.3)

    @classmethod
    def from_json(cls, d: JSON) -> Entry:
        return cls(d["rank"], d["player"], d.get("display_name"), d["score"], d.get("metadata"), d, d.get("subscores"))


@dataclass(frozen=True)
class Top:
    game: str
    board: str
    window: str
    total: int
    entries: tuple[Entry, ...]
    next_cursor: str | None = None
    raw: JSON = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, d: JSON) -> Top:
        return cls(d["game"], d["board"], d["window"], d["total"], tuple(Entry.from_json(e) for e in d["entries"]),
                   d.get("next_cursor"), d)  # fmt: skip


@dataclass(frozen=True)
class Standing:
    """A player's place on a board window (docs/api.md §5): rank and score are None for a
    known player without a score there."""

    player: str
    rank: int | None
    score: int | None
    total: int
    percentile: float | None
    around: tuple[Entry, ...]
    window: str
    display_name: str | None = None
    rank_exact: bool = True
    rank_error: int | None = None
    raw: JSON = field(default_factory=dict, compare=False, repr=False)
    subscores: dict[str, int] | None = None  # the player's own, on boards that declare sub-scores

    @classmethod
    def from_json(cls, d: JSON) -> Standing:
        return cls(d["player"], d.get("rank"), d.get("score"), d["total"], d.get("percentile"),
                   tuple(Entry.from_json(e) for e in d.get("around", [])), d.get("window", ""),
                   d.get("display_name"), d.get("rank_exact", True), d.get("rank_error"), d,
                   d.get("subscores"))  # fmt: skip


@dataclass(frozen=True)
class FriendEntry:
    rank: int
    board_rank: int
    player: str
    display_name: str | None
    score: int
    raw: JSON = field(default_factory=dict, compare=False, repr=False)
    subscores: dict[str, int] | None = None  # only on boards that declare sub-scores

    @classmethod
    def from_json(cls, d: JSON) -> FriendEntry:
        return cls(d["rank"], d["board_rank"], d["player"], d.get("display_name"), d["score"], d, d.get("subscores"))


@dataclass(frozen=True)
class Friends:
    player: str
    window: str
    entries: tuple[FriendEntry, ...]
    raw: JSON = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, d: JSON) -> Friends:
        return cls(d.get("player", ""), d.get("window", ""), tuple(FriendEntry.from_json(e) for e in d["entries"]), d)


@dataclass(frozen=True)
class FrozenEntry:
    rank: int
    position: int
    player: str
    display_name: str | None
    score: int
    raw: JSON = field(default_factory=dict, compare=False, repr=False)
    subscores: dict[str, int] | None = None  # only on boards that declare sub-scores

    @classmethod
    def from_json(cls, d: JSON) -> FrozenEntry:
        return cls(d["rank"], d.get("position", d["rank"]), d["player"], d.get("display_name"), d["score"], d,
                   d.get("subscores"))  # fmt: skip


@dataclass(frozen=True)
class Standings:
    """A window's frozen standings (docs/api.md §10)."""

    game: str
    board: str
    window: str
    version: int
    frozen_at: datetime | None
    total: int
    entries: tuple[FrozenEntry, ...]
    raw: JSON = field(default_factory=dict, compare=False, repr=False)
    group: str | None = None  # only on a league group's standings (`group=`), `version` then the group's own

    @classmethod
    def from_json(cls, d: JSON) -> Standings:
        return cls(d["game"], d["board"], d["window"], d["version"], _parse_instant(d.get("frozen_at")), d["total"],
                   tuple(FrozenEntry.from_json(e) for e in d["entries"]), d, d.get("group"))  # fmt: skip


@dataclass(frozen=True)
class Bucket:
    min: int
    max: int
    count: int


@dataclass(frozen=True)
class Histogram:
    window: str
    total: int
    refreshed_at: datetime | None
    buckets: tuple[Bucket, ...]
    raw: JSON = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, d: JSON) -> Histogram:
        return cls(d["window"], d["total"], _parse_instant(d.get("refreshed_at")),
                   tuple(Bucket(b["min"], b["max"], b["count"]) for b in d["buckets"]), d)  # fmt: skip


@dataclass(frozen=True)
class PlayerToken:
    """A bearer token with which a game client reads as one player (docs/api.md §3.2). Hand
    `token` to the player's client; `expires_at` says when to ask for another."""

    player: str
    token: str
    expires_at: datetime

    def expires_within(self, seconds: float) -> bool:
        return (self.expires_at - datetime.now(UTC)).total_seconds() < seconds

    @property
    def authorization(self) -> str:
        return f"Bearer {self.token}"


# --- live messages (docs/api.md §9) -----------------------------------------------------


@dataclass(frozen=True)
class TopMessage:
    window: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class RankMessage:
    rank: int | None
    score: int | None
    subscores: dict[str, int] | None = None  # only on boards that declare sub-scores


@dataclass(frozen=True)
class PassedMessage:
    by_player: str
    by_display_name: str | None
    rank: int | None


LiveMessage = TopMessage | RankMessage | PassedMessage


def live_message(d: JSON) -> LiveMessage | None:
    """The typed message, or None for a type this version does not know (skipped)."""
    kind = d.get("type")
    if kind == "top":
        return TopMessage(d.get("window", ""), tuple(Entry.from_json(e) for e in d.get("entries", [])))
    if kind == "rank":
        return RankMessage(d.get("rank"), d.get("score"), d.get("subscores"))
    if kind == "passed":
        by = d.get("by") or {}
        return PassedMessage(by.get("player", ""), by.get("display_name"), d.get("rank"))
    return None


@dataclass(frozen=True)
class Event:
    """One event of the game's feed (docs/api.md §13.1). `id` is its cursor: keep the last one
    handled, and resume with `events(after=id)`."""

    id: str
    type: str  # "match.accepted", "value.changed", ...
    at: datetime
    data: JSON
    raw: JSON = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, d: JSON) -> Event:
        at = _parse_instant(d["at"])
        assert at is not None
        return cls(d["id"], d["type"], at, d["data"], d)


@dataclass(frozen=True)
class EventsPage:
    events: tuple[Event, ...]
    next: str  # ask again with after= this, also when no events came
    raw: JSON = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, d: JSON) -> EventsPage:
        return cls(tuple(Event.from_json(e) for e in d["events"]), d["next"], d)
