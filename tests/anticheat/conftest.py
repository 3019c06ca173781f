from __future__ import annotations

import pytest

from boards import selectors
from boards.services import outbox_drain
from scores.selectors import cached_board
from tests.conftest import SignedClient
from tests.factories import RULES_OFF, BoardFactory, GameFactory, SeasonFactory, server_key

URL = "/api/v1/games/arena"


@pytest.fixture
def arena(transactional_db):
    """A game whose boards keep the default anti-cheat thresholds (hold rules need history)."""
    g = GameFactory(slug="arena")
    BoardFactory(game=g, slug="rating", anticheat={"max_matches_per_minute": 5})
    BoardFactory(game=g, slug="golf", order="asc", min_score=18, max_score=200, anticheat={})
    BoardFactory(game=g, slug="points", mode="total", max_score=1000, anticheat={"max_gain": 500})
    # rules off: for the void/approve arithmetic
    BoardFactory(game=g, slug="free", anticheat=dict(RULES_OFF))
    BoardFactory(game=g, slug="freesum", mode="total", max_score=1000, anticheat=dict(RULES_OFF))
    SeasonFactory(game=g, slug="s1")
    return g


@pytest.fixture
def gs(arena) -> SignedClient:
    """A game server with the submit scope only."""
    key, secret = server_key(arena, scopes=("submit",), name="eu-1")
    return SignedClient(key.key_id, secret)


@pytest.fixture
def mod(arena) -> SignedClient:
    """An anti-cheat service with the moderate scope."""
    key, secret = server_key(arena, scopes=("moderate",), name="anticheat")
    return SignedClient(key.key_id, secret)


def submit(server: SignedClient, match_id: str, results: list[dict], at: str = "2026-11-28T12:00:00Z"):
    """POST /matches; on a 2xx, returns once the projector has it on the boards (SignedClient waits)."""
    return server.post(f"{URL}/matches", {"match_id": match_id, "ended_at": at, "results": results})


def top(board: str, window: str = "all") -> list[tuple[str, int]]:
    """The board as Redis holds it now (the /top endpoint may serve a page up to 1 s old)."""
    return [
        (e.external_id, e.value)
        for e in selectors.board_range(cached_board("arena", board_slug=board), window=window, start=0, stop=100)
    ]


def drain() -> None:
    outbox_drain(grace_seconds=0)


@pytest.fixture
def moderators_group(transactional_db) -> None:
    moderators_group_create()


@pytest.fixture
def moderator(moderators_group, arena):  # noqa: ANN201
    """A staff user in the moderators group who moderates arena (docs/moderation.md, "Moderators per game")."""
    from anticheat.services import moderator_grant

    return moderator_grant(username="mo", games=["arena"], password="pw")[0].user


def moderators_group_create() -> None:
    """The `moderators` group as the data migrations make it (transactional tests empty the
    tables the migrations filled)."""
    import importlib

    from django.apps import apps

    importlib.import_module("anticheat.migrations.0002_moderators_group").create_group(apps, None)
    importlib.import_module("anticheat.migrations.0007_moderators_see_frozen_standings").grant(apps, None)
