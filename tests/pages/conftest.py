from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scores.models import Player, PlayerAccount
from tests.boards.conftest import submit
from tests.boards.test_redis_down import throwaway_redis  # noqa: F401  (a fixture for tests/pages)
from tests.conftest import SignedClient

PASSWORD = "pw-pages-1"
BOARD = "/games/chess/boards/rating/"


def signed_in(external_id: str) -> Client:
    """A browser session signed in as the user who plays `external_id` (made here if none)."""
    player = Player.objects.get(external_id=external_id)
    account = PlayerAccount.objects.filter(player=player).select_related("user").first()
    if account is None:
        user = get_user_model().objects.create_user(username=external_id, password=PASSWORD)
        PlayerAccount.objects.create(user=user, game_id=player.game_id, player=player)
    else:
        user = account.user
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def ranked(server: SignedClient, game) -> SignedClient:
    """rating, all time: ana 500, bo 400, cy 300, dee 200, eve 100 (today, 2026-11-28 by default)."""
    names = {"ana": "Ana", "bo": "Bo", "cy": "Cyrus", "dee": "Dee", "eve": "Eve"}
    results = [
        {"player": p, "board": "rating", "score": 500 - 100 * i, "display_name": names[p]} for i, p in enumerate(names)
    ]
    submit(server, "m1", results)
    return server
