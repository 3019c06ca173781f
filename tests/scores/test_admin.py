from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from scores.models import ServerKey
from tests.conftest import SignedClient


@pytest.fixture
def staff_client(transactional_db) -> Client:
    User.objects.create_superuser("admin", "admin@example.com", "pw")
    client = Client()
    client.login(username="admin", password="pw")
    return client


def test_admin_revoke_action_refuses_the_key_at_once(server: SignedClient, game, staff_client: Client) -> None:
    key = ServerKey.objects.get(key_id=server.key_id)
    response = staff_client.post(
        "/admin/scores/serverkey/", {"action": "revoke", "_selected_action": [key.pk]}, follow=True
    )
    assert response.status_code == 200
    body = {
        "match_id": "m",
        "ended_at": "2026-11-28T00:00:00Z",
        "results": [{"player": "p", "board": "rating", "score": 5}],
    }
    assert server.post("/api/v1/games/chess/matches", body).status_code == 403


@pytest.mark.parametrize(
    "page", ["/admin/scores/game/", "/admin/scores/match/", "/admin/scores/player/", "/admin/scores/serverkey/"]
)
def test_admin_pages_render(server: SignedClient, staff_client: Client, page: str) -> None:
    body = {
        "match_id": "m",
        "ended_at": "2026-11-28T00:00:00Z",
        "results": [{"player": "p", "board": "rating", "score": 5}],
    }
    server.post("/api/v1/games/chess/matches", body)
    assert staff_client.get(page).status_code == 200


def test_admin_needs_staff(transactional_db) -> None:
    response = Client().get("/admin/scores/match/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
