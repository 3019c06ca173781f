"""What the pages show of competitions (docs/competitions.md): a tournament's state and the
countdown to its next change (the start of an upcoming one, the end of an active one), the
tournaments a player joined, and the signed-in player's league group with its promotion and
relegation lines. Read through competitions/selectors.py, as the API reads them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from competitions.selectors import (
    LeagueGroupRead,
    TournamentRow,
    entries_joined,
    league_group_read,
    tournaments_joined,
    tournaments_list,
)
from competitions.services import TournamentEnded, TournamentFull, tournament_join
from competitions.tournaments import tournament_of
from pages.periods import countdown
from scores import windows
from scores.selectors import BoardConfig, GameConfig


@dataclass(frozen=True)
class TournamentCard:
    slug: str
    name: str
    state: str  # upcoming, active, ended
    starts_at: datetime
    ends_at: datetime
    size: int
    max_size: int  # 0: unlimited
    join_required: bool
    max_attempts: int  # 0: unlimited
    period: str  # what max_attempts counts over: "day", "week", "tournament"
    left: str  # the countdown to `at` at render time (static/js/countdown.js keeps it ticking)
    joined: bool | None = None  # the signed-in player's entry (None: nobody signed in)

    @property
    def at(self) -> datetime | None:
        """The next change: the start of an upcoming tournament, the end of an active one."""
        return {"upcoming": self.starts_at, "active": self.ends_at}.get(self.state)

    @property
    def iso(self) -> str:
        at = self.at
        return at.isoformat().replace("+00:00", "Z") if at else ""

    @property
    def verb(self) -> str:
        return {"upcoming": "Starts", "active": "Ends"}.get(self.state, "Ended")

    @property
    def full(self) -> bool:
        return bool(self.max_size) and self.size >= self.max_size

    @property
    def places_left(self) -> int:
        return max(self.max_size - self.size, 0)

    @property
    def join(self) -> str:
        """What the signed-in player's join box offers: "" (nothing: not a join-required
        tournament, nobody signed in, or joined), "closed" (ended), "full", or "open"."""
        if not self.join_required or self.joined is not False:
            return ""
        if self.state == "ended":
            return "closed"
        return "full" if self.full else "open"


_PERIODS = {"daily": "day", "weekly": "week", "all": "tournament"}


def _card(row: TournamentRow, now: datetime, joined: bool | None = None) -> TournamentCard:
    t = row.tournament
    at = {"upcoming": t.starts_at, "active": t.ends_at}.get(row.state)
    return TournamentCard(
        row.slug,
        row.name,
        row.state,
        t.starts_at,
        t.ends_at,
        row.size,
        t.max_size,
        t.join_required,
        t.max_attempts,
        _PERIODS[t.period_kind],
        countdown((at - now).total_seconds()) if at else "",
        joined,
    )


def game_tournaments(config: GameConfig, *, now: datetime) -> list[TournamentCard]:
    """The game's tournaments, active first, then upcoming, then ended; by start within each."""
    order = {"active": 0, "upcoming": 1, "ended": 2}
    rows = sorted(tournaments_list(config, state=None, now=now), key=lambda r: order[r.state])
    return [_card(r, now) for r in rows]


def board_tournament(
    config: GameConfig, cfg: BoardConfig, *, me_pk: int | None, now: datetime
) -> TournamentCard | None:
    """The board's tournament, with whether the signed-in player joined; None on other boards."""
    if tournament_of(cfg) is None:
        return None
    row = next(r for r in tournaments_list(config, state=None, now=now) if r.slug == cfg.slug)
    joined = None if me_pk is None else (cfg.id, me_pk) in entries_joined([(cfg.id, me_pk)])
    return _card(row, now, joined)


def player_tournaments(config: GameConfig, *, player_pk: int, now: datetime) -> list[TournamentCard]:
    return [_card(r, now) for r in tournaments_joined(config, player_pk=player_pk, now=now)]


def my_league(cfg: BoardConfig, *, window: str, me_pk: int | None, now: datetime) -> LeagueGroupRead | None:
    """The signed-in player's group on a league board: in the page's season, or in the running
    season when the page shows another window. None: not a league, nobody signed in, or no
    season running."""
    if cfg.league is None or me_pk is None:
        return None
    season = windows.split_region(window)[1]
    if not season.startswith("season:"):
        try:
            season = windows.resolve("season", now, cfg.reset_timezone, cfg.windows, cfg.seasons)
        except windows.UnknownWindow:
            return None
    return league_group_read(cfg, window=season, player_pk=me_pk)


@dataclass(frozen=True)
class JoinOutcome:
    level: str  # "success" or "error", as django.contrib.messages names them
    message: str


def tournament_join_for(cfg: BoardConfig, *, me_pk: int, me_external_id: str, now: datetime) -> JoinOutcome:
    """The join button's POST (docs/competitions.md, "On the pages"): the signed-in player joins
    through the API's own service, and the answer says what happened in words."""
    tournament = tournament_of(cfg)
    assert tournament is not None
    already = (cfg.id, me_pk) in entries_joined([(cfg.id, me_pk)])
    try:
        size = tournament_join(cfg, player_external_id=me_external_id, now=now)
    except TournamentEnded:
        return JoinOutcome("error", f"{cfg.name} has ended: joining is closed.")
    except TournamentFull:
        return JoinOutcome("error", f"{cfg.name} is full: all {tournament.max_size:,} places are taken.")
    places = f"{size:,} of {tournament.max_size:,}" if tournament.max_size else f"{size:,}"
    if already:
        return JoinOutcome("success", f"You are already in {cfg.name} ({places} joined).")
    return JoinOutcome("success", f"You joined {cfg.name}: {places} joined.")
