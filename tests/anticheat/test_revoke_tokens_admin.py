"""Moderators revoke players' bearer tokens from the admin (docs/api.md §3.2, "Revoking";
docs/moderation.md): the Player list's action, refused to staff without the moderate permission."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from scores.models import Player, PlayerTokenGeneration
from tests.anticheat.conftest import URL, submit
from tests.conftest import SignedClient

PLAYERS = "/admin/scores/player/"


def login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def reads(token: str) -> int:
    client = Client(headers={"Authorization": f"Bearer {token}"})
    return client.get(f"{URL}/boards/rating/players/a").status_code


def token_of(gs: SignedClient, player: str) -> str:
    response = gs.post(f"{URL}/players/{player}/token")
    assert response.status_code == 200, response.content
    return response.json()["token"]


def test_a_moderator_revokes_a_players_tokens_from_the_player_list(moderator, gs) -> None:
    assert submit(gs, "m1", [{"player": "a", "board": "rating", "score": 100}]).status_code == 201
    token = token_of(gs, "a")
    assert reads(token) == 200
    a = Player.objects.get(external_id="a")

    plain = User.objects.create_user("viewer", password="pw", is_staff=True)
    plain.user_permissions.add(*moderator.groups.get().permissions.exclude(codename="moderate_match"))
    login(plain).post(PLAYERS, {"action": "revoke_tokens", "_selected_action": [a.pk]})
    assert reads(token) == 200 and not PlayerTokenGeneration.objects.exists()

    client = login(moderator)
    assert b"Revoke selected players" in client.get(PLAYERS).content
    done = client.post(PLAYERS, {"action": "revoke_tokens", "_selected_action": [a.pk]}, follow=True)
    assert b"Revoked the tokens of 1 player(s)." in done.content
    assert reads(token) == 401
