"""`manage.py moderator_grant` and `moderator_revoke`, and the same grant in the admin for
superusers (docs/moderation.md, "Moderators per game")."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import CommandError, call_command
from django.test import Client

from anticheat.models import GameModerator
from scores.models import Game
from tests.anticheat.conftest import moderators_group_create
from tests.factories import GameFactory, PlayerFactory

PASSWORD = "a long moderator password"


@pytest.fixture
def games(db) -> dict[str, Game]:
    moderators_group_create()
    return {slug: GameFactory(slug=slug) for slug in ("arena", "brawl", "chess")}


def grant(*args: str) -> str:
    out = StringIO()
    call_command("moderator_grant", *args, stdout=out)
    return out.getvalue()


def revoke(*args: str) -> str:
    out = StringIO()
    call_command("moderator_revoke", *args, stdout=out)
    return out.getvalue()


def players_listed(client: Client) -> set[str]:
    page = client.get("/admin/scores/player/")
    assert page.status_code == 200
    return {p.external_id for p in page.context["cl"].result_list}


def test_grant_creates_a_staff_moderator_with_the_password_from_the_environment(games, monkeypatch) -> None:
    monkeypatch.setenv("MODERATOR_PASSWORD", PASSWORD)
    assert grant("alice", "arena", "brawl") == "alice moderates arena, brawl\n"
    alice = User.objects.get(username="alice")
    assert alice.is_staff and alice.is_active and not alice.is_superuser
    assert alice.check_password(PASSWORD)
    assert alice.groups.filter(name="moderators").exists()
    assert set(GameModerator.objects.filter(user=alice).values_list("game__slug", flat=True)) == {"arena", "brawl"}

    # she signs in with that password and sees the players of her games only
    for game in games.values():
        PlayerFactory(game=game, external_id=f"{game.slug}-p")
    client = Client()
    assert client.login(username="alice", password=PASSWORD)
    assert players_listed(client) == {"arena-p", "brawl-p"}


def test_grant_to_an_existing_user_keeps_their_password_and_adds_games(games, monkeypatch) -> None:
    monkeypatch.delenv("MODERATOR_PASSWORD", raising=False)
    User.objects.create_user("bob", password="bob's own")
    grant("bob", "arena")
    grant("bob", "arena", "chess")  # again: no duplicate, one more game
    bob = User.objects.get(username="bob")
    assert bob.check_password("bob's own") and bob.is_staff and not bob.is_superuser
    assert sorted(GameModerator.objects.filter(user=bob).values_list("game__slug", flat=True)) == ["arena", "chess"]
    assert Group.objects.get(name="moderators").user_set.filter(pk=bob.pk).count() == 1


def test_grant_refuses_unknown_games_and_a_missing_password_and_changes_nothing(games, monkeypatch) -> None:
    monkeypatch.setenv("MODERATOR_PASSWORD", PASSWORD)
    with pytest.raises(CommandError, match="unknown game.*nope"):
        grant("carol", "arena", "nope")
    assert not User.objects.filter(username="carol").exists()
    monkeypatch.delenv("MODERATOR_PASSWORD")
    with pytest.raises(CommandError, match="MODERATOR_PASSWORD"):
        grant("carol", "arena")
    assert not User.objects.filter(username="carol").exists() and not GameModerator.objects.exists()
    with pytest.raises(CommandError):
        call_command("moderator_grant", "carol")  # no game at all: argparse's own refusal


def test_revoke_takes_a_game_away(games, monkeypatch) -> None:
    monkeypatch.setenv("MODERATOR_PASSWORD", PASSWORD)
    grant("dave", "arena", "brawl")
    for game in games.values():
        PlayerFactory(game=game, external_id=f"{game.slug}-p")
    assert revoke("dave", "brawl") == "dave: 1 game(s) taken away\n"
    client = Client()
    client.force_login(User.objects.get(username="dave"))
    assert players_listed(client) == {"arena-p"}
    brawl_player = games["brawl"].players.get()
    assert client.get(f"/admin/scores/player/{brawl_player.pk}/change/").status_code == 404
    revoke("dave", "arena")
    assert players_listed(client) == set()


def test_revoke_refuses_unknown_users_and_games(games) -> None:
    with pytest.raises(CommandError, match="no user 'erin'"):
        revoke("erin", "arena")
    User.objects.create_user("erin", password="pw", is_staff=True)
    with pytest.raises(CommandError, match="unknown game.*nope"):
        revoke("erin", "nope")


def test_superusers_grant_and_revoke_in_the_admin_and_nobody_else_does(games, monkeypatch) -> None:
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    frank = User.objects.create_user("frank", password="pw")  # not staff yet
    admin = Client()
    admin.force_login(root)
    added = admin.post("/admin/anticheat/gamemoderator/add/", {"user": frank.pk, "game": games["brawl"].pk})
    assert added.status_code == 302, added.content
    frank.refresh_from_db()
    assert frank.is_staff and not frank.is_superuser and frank.groups.filter(name="moderators").exists()
    grant_row = GameModerator.objects.get(user=frank)
    assert grant_row.game.slug == "brawl"

    # a moderator, even one given the page's permissions, cannot open it
    monkeypatch.setenv("MODERATOR_PASSWORD", PASSWORD)
    grant("gina", "brawl")
    User.objects.get(username="gina").user_permissions.add(
        *Permission.objects.filter(content_type__app_label="anticheat", content_type__model="gamemoderator")
    )
    gina = Client()
    gina.force_login(User.objects.get(username="gina"))
    assert gina.get("/admin/anticheat/gamemoderator/").status_code == 403
    assert gina.post(f"/admin/anticheat/gamemoderator/{grant_row.pk}/delete/", {"post": "yes"}).status_code in (
        403,
        404,
    )
    assert GameModerator.objects.filter(pk=grant_row.pk).exists()

    deleted = admin.post(f"/admin/anticheat/gamemoderator/{grant_row.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    assert not GameModerator.objects.filter(user=frank).exists()
