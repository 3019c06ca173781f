from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.boards.conftest import submit
from tests.conftest import SignedClient

DAY = "2026-11-27"
AFTER_GRACE = datetime(2026, 11, 28, 0, 5, 0, tzinfo=UTC)  # midnight UTC + the 300 s grace


@pytest.fixture
def day(server: SignedClient, game) -> SignedClient:
    """Nine players on 2026-11-27, with a tie broken by time and one by player id."""
    results = [{"player": f"p{i}", "board": "rating", "score": 100 - 10 * (i // 2)} for i in range(9)]
    submit(server, "d1", results, at=f"{DAY}T10:00:00Z")
    submit(server, "d2", [{"player": "early", "board": "rating", "score": 100}], at=f"{DAY}T09:00:00Z")
    return server
