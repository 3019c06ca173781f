"""Factories for the durable models. Server keys go through the service (it makes the secret)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import factory
from django.db import connection

from scores.models import Board, Game, Player, Season, ServerKey
from scores.services import server_key_create


class GameFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Game

    slug = factory.Sequence(lambda n: f"game-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    reset_timezone = "UTC"
    # Tests use fixed dates: keep their windows' sorted sets whatever today's date is.
    # (tests/seasons/ covers expiry with a game of its own.)
    retention_periods = 100_000


# Every anti-cheat rule off: tests of ingest, reads and seasons submit freely (one player many
# times a minute, scores far above their history). tests/anticheat/ passes its own thresholds.
RULES_OFF = {
    "max_matches_per_minute": 0,
    "history_factor": 0,
    "top_margin_percent": 0,
    "server_zscore": 0,
    "async_history_factor": 0,
}


class BoardFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Board

    game = factory.SubFactory(GameFactory)
    slug = factory.Sequence(lambda n: f"board-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    order = "desc"
    mode = "best"
    windows = factory.LazyFunction(lambda: ["all", "daily", "weekly", "monthly", "season"])
    min_score = 0
    max_score = 10_000_000
    rank_display = "unique"
    anticheat = factory.LazyFunction(lambda: dict(RULES_OFF))


class SeasonFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Season

    game = factory.SubFactory(GameFactory)
    slug = factory.Sequence(lambda n: f"s{n}")
    name = factory.LazyAttribute(lambda o: o.slug.upper())
    # Starts before the fixed dates tests write (November 2026) and stays current whatever
    # today's date is: a test that needs the season over passes its own `ends_at` and a `now`.
    starts_at = datetime(2026, 11, 1, tzinfo=UTC)
    ends_at = factory.LazyFunction(lambda: datetime.now(UTC).replace(microsecond=0) + timedelta(days=365))


class PlayerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Player

    game = factory.SubFactory(GameFactory)
    external_id = factory.Sequence(lambda n: f"p{n}")


def tournament_settings(starts_at: datetime, ends_at: datetime, **settings: object) -> dict[str, object]:
    """A board's `tournament` settings as scores.Board stores them (the parse of a
    `[boards.tournament]` table, competitions/tournaments.py): open to all, unlimited, unless
    `settings` say otherwise (join_required, max_size, max_attempts)."""
    return {
        "starts_at": starts_at.isoformat(),
        "ends_at": ends_at.isoformat(),
        "join_required": False,
        "max_size": 0,
        "max_attempts": 0,
        **settings,
    }


def tournament_board(
    game: Game,
    *,
    starts_at: datetime,
    ends_at: datetime,
    slug: str = "cup",
    windows: tuple[str, ...] = ("all",),
    board: dict[str, object] | None = None,
    **settings: object,
) -> Board:
    """A tournament board of `game` (docs/competitions.md): `board` holds its other fields
    (name, max_score, rewards), `settings` its tournament's."""
    return BoardFactory(
        game=game,
        slug=slug,
        windows=list(windows),
        tournament=tournament_settings(starts_at, ends_at, **settings),
        **(board or {}),
    )


def server_key(game: Game, scopes: tuple[str, ...] = ("submit",), name: str = "test server") -> tuple[ServerKey, str]:
    return server_key_create(game=game, name=name, scopes=scopes)


def migrated_test_database_url() -> str:
    """The database the tests run against (pytest-django's test_ database), for the servers a
    test starts as separate processes."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
