from __future__ import annotations

import pytest
from django.test import Client

from scores.models import Player
from scores.services import player_token_issue
from tests.conftest import SHARDS, SignedClient, member_key, set_keys, set_members, topology  # noqa: F401
from tests.scores.conftest import projector_process  # noqa: F401 (the real projector, for the 1 s tests)

URL = "/api/v1/games/chess"


def submit(server: SignedClient, match_id: str, results: list[dict], at: str = "2026-11-28T12:00:00Z") -> None:
    """Submits one match; returns once the projector has it on the boards (SignedClient waits)."""
    response = server.post(f"{URL}/matches", {"match_id": match_id, "ended_at": at, "results": results})
    assert response.status_code == 201, response.content


def player_client(player: str) -> Client:
    token, _ = player_token_issue(player=Player.objects.get(external_id=player))
    return Client(headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def ranked(server: SignedClient, game) -> SignedClient:
    """rating: p1 500, p2 400, p3 400 (p3 earlier), p4 300, p5 100; golf (asc): p1 70, p2 72."""
    submit(
        server,
        "m1",
        [{"player": "p1", "board": "rating", "score": 500, "display_name": "Ana", "metadata": {"replay": "r1"}}],
    )
    submit(server, "m2", [{"player": "p2", "board": "rating", "score": 400}], at="2026-11-28T12:00:05Z")
    submit(server, "m3", [{"player": "p3", "board": "rating", "score": 400}], at="2026-11-28T12:00:01Z")
    submit(
        server,
        "m4",
        [{"player": "p4", "board": "rating", "score": 300}, {"player": "p5", "board": "rating", "score": 100}],
    )
    submit(
        server, "m5", [{"player": "p1", "board": "golf", "score": 70}, {"player": "p2", "board": "golf", "score": 72}]
    )
    return server
