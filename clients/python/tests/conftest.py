"""The client's tests run against a real, served leaderboard service, named by the environment:

    LEADERBOARD_URL      the service (http://127.0.0.1:8000)
    LEADERBOARD_GAME     a game configured as game.toml beside this file
    LEADERBOARD_KEY_ID   a server key of that game with the scopes submit and moderate
    LEADERBOARD_SECRET   its secret

The project's `make test` starts the whole web tier (nginx in front, real Postgres and Redis),
applies game.toml, makes the key and runs these tests twice: in the project's virtualenv and in a
clean one where only the built wheel is installed (tests/clients/ in the repository). Without
those variables the tests are skipped, saying why."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from leaderboard_client import Client

GAME_TOML = Path(__file__).with_name("game.toml")  # the game these tests expect

ENV = ("LEADERBOARD_URL", "LEADERBOARD_GAME", "LEADERBOARD_KEY_ID", "LEADERBOARD_SECRET")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [v for v in ENV if not os.environ.get(v)]
    if missing:
        skip = pytest.mark.skip(reason=f"no service to test against: set {', '.join(missing)} (tests/conftest.py)")
        for item in items:
            item.add_marker(skip)


@pytest.fixture
def url() -> str:
    return os.environ["LEADERBOARD_URL"]


@pytest.fixture
def game() -> str:
    return os.environ["LEADERBOARD_GAME"]


@pytest.fixture
def creds() -> dict[str, str]:
    return {"key_id": os.environ["LEADERBOARD_KEY_ID"], "secret": os.environ["LEADERBOARD_SECRET"]}


@pytest.fixture
def client(url: str, game: str, creds: dict[str, str]) -> Iterator[Client]:
    with Client(url, game, **creds) as c:
        yield c


@pytest.fixture
def uid() -> str:
    """A prefix unique to this test, for its players and matches: the runs share one database."""
    return uuid.uuid4().hex[:10]
