"""The client's tests run against a real, served leaderboard service, named by the environment:

    LEADERBOARD_URL      the service (http://127.0.0.1:8000)
    LEADERBOARD_GAME     a game configured as game.toml beside this file
    LEADERBOARD_KEY_ID   a server key of that game with the scopes submit, moderate and events
    LEADERBOARD_SECRET   its secret

The project's `make test` starts the whole web tier (nginx in front, real Postgres and Redis),
applies game.toml, makes the key and runs these tests twice: in the project's virtualenv and in a
clean one where only the built wheel is installed (tests/clients/ in the repository). Without
those variables the tests are skipped, saying why."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from leaderboard_client import Client

GAME_TOML = Path(__file__).with_name("game.toml")  # the game these tests expect

ENV = ("LEADERBOARD_URL", "LEADERBOARD_GAME", "LEADERBOARD_KEY_ID", "LEADERBOARD_SECRET")

# docs/api.md §4.4 promises a result on the boards within 1 s of its 2xx; the deadline is
# generous for a shared test machine, and a wait ends as soon as the service says it is there.
SETTLE_SECONDS = 10.0
SETTLE_EVERY = 0.02


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


@pytest.fixture
def settled(url: str) -> Callable[[], None]:
    """Waits until everything the service has acknowledged is on the boards.

    A 2xx means the match is stored; the projector applies it to the boards afterwards, within
    docs/api.md §4.4's second. A test that reads what it just wrote calls this in between. The
    service says when nothing acknowledged is still on its way: GET /healthz reports the
    backlog as `details.ingest_lag.pending` (docs/api.md §11). Polled with a deadline, never a
    guessed sleep; another test's writes can only make the wait longer, never end it early."""

    def wait() -> None:
        deadline = time.monotonic() + SETTLE_SECONDS
        last = "no answer"
        with httpx.Client(base_url=url, timeout=5.0) as http:
            while True:
                try:
                    answer = http.get("/healthz")
                    last = f"{answer.status_code} {answer.text[:1000]}"
                    if answer.json().get("details", {}).get("ingest_lag", {}).get("pending") == 0:
                        return
                except (httpx.HTTPError, ValueError) as exc:  # not up, or not JSON: ask again
                    last = repr(exc)
                if time.monotonic() > deadline:
                    raise AssertionError(f"acknowledged results not on the boards within {SETTLE_SECONDS} s: {last}")
                time.sleep(SETTLE_EVERY)  # polling with a deadline

    return wait
