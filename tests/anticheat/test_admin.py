"""The moderators' admin: the review queue and its actions, permissions, the audit log."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from anticheat.models import AuditEntry
from scores.models import Match, ServerKey
from tests.anticheat.conftest import submit, top

QUEUE = "/admin/anticheat/reviewmatch/"


def login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def _group(moderators_group) -> None:
    """Every test here has the data migrations' moderators group."""


@pytest.fixture
def held(gs) -> Match:
    submit(gs, "h0", [{"player": "a", "board": "rating", "score": 100}])
    assert submit(gs, "h1", [{"player": "a", "board": "rating", "score": 5000}]).json()["status"] == "held"
    return Match.objects.get(match_id="h1")


def test_the_group_has_exactly_the_moderation_permissions(transactional_db) -> None:
    perms = {f"{p.content_type.app_label}.{p.codename}" for p in Group.objects.get(name="moderators").permissions.all()}
    assert perms == {
        "scores.view_match",
        "scores.view_result",
        "scores.view_player",
        "anticheat.view_reviewmatch",
        "anticheat.moderate_match",
        "anticheat.view_auditentry",
        "seasons.view_windowfreeze",
        "seasons.view_windowclose",
    }


def test_queue_lists_held_matches_with_context(moderator, held) -> None:
    client = login(moderator)
    page = client.get(QUEUE)
    # the listed rows, not the page's bytes: a random CSRF token once held "h0"
    assert page.status_code == 200 and [m.match_id for m in page.context["cl"].result_list] == ["h1"]
    detail = client.get(f"{QUEUE}{held.pk}/change/")
    assert detail.status_code == 200
    assert b"would rank" in detail.content and b"History" in detail.content


def test_moderator_approves_from_the_queue(moderator, held) -> None:
    response = login(moderator).post(QUEUE, {"action": "approve", "_selected_action": [held.pk]}, follow=True)
    assert response.status_code == 200
    assert Match.objects.get(pk=held.pk).status == "accepted"
    assert top("rating") == [("a", 5000)]
    assert AuditEntry.objects.get(action="approve").actor_user == moderator


def test_void_previews_and_asks_for_a_reason_first(moderator, held) -> None:
    client = login(moderator)
    form = client.post(QUEUE, {"action": "void", "_selected_action": [held.pk]}, follow=True)
    assert form.status_code == 200 and b"reason" in form.content
    assert Match.objects.get(pk=held.pk).status == "held"
    token = form.context["preview"].token
    done = client.post(
        form.redirect_chain[-1][0], {"confirm": "1", "token": token, "reason": "impossible"}, follow=True
    )
    assert done.status_code == 200
    assert Match.objects.get(pk=held.pk).status == "voided"
    assert AuditEntry.objects.get(action="void").reason == "impossible"


def test_bulk_void_form_by_player(moderator, gs, arena) -> None:
    submit(gs, "m1", [{"player": "z", "board": "free", "score": 10}])
    submit(gs, "m2", [{"player": "z", "board": "free", "score": 20}], at="2026-11-28T13:00:00Z")
    form = {
        "game": arena.pk,
        "player": "z",
        "since": "2026-11-28 00:00",
        "until": "2026-11-29 00:00",
        "reason": "account sold",
    }
    client = login(moderator)
    preview = client.post(QUEUE + "bulk-void/", {**form, "preview": "1"})
    assert preview.status_code == 200 and set(Match.objects.values_list("status", flat=True)) == {"accepted"}
    response = client.post(QUEUE + "bulk-void/", {**form, "confirm": "1", "token": preview.context["preview"].token})
    assert response.status_code == 302
    assert set(Match.objects.values_list("status", flat=True)) == {"voided"}
    assert top("free") == []


def test_moderator_cannot_revoke_keys_or_edit_boards_unless_granted(moderator, held) -> None:
    client = login(moderator)
    client.post(QUEUE, {"action": "revoke_server_key", "_selected_action": [held.pk]})
    assert ServerKey.objects.get(pk=held.server_key_id).revoked_at is None
    assert client.get("/admin/scores/game/").status_code == 403
    assert client.get("/admin/scores/serverkey/").status_code == 403
    moderator.user_permissions.add(Permission.objects.get(codename="change_serverkey"))
    client = login(User.objects.get(pk=moderator.pk))
    client.post(QUEUE, {"action": "revoke_server_key", "_selected_action": [held.pk]}, follow=True)
    assert ServerKey.objects.get(pk=held.server_key_id).revoked_at is not None
    assert AuditEntry.objects.filter(action="revoke_key").count() == 1


def test_anonymous_and_plain_users_cannot_reach_the_queue(transactional_db) -> None:
    assert Client().get(QUEUE).status_code == 302
    plain = User.objects.create_user("p", password="pw", is_staff=True)
    assert login(plain).get(QUEUE).status_code == 403
    player = User.objects.create_user("player", password="pw")  # not staff
    assert login(player).get(QUEUE).status_code == 302


def test_audit_log_is_not_editable_even_by_a_superuser(held) -> None:
    admin = User.objects.create_superuser("root", "r@example.com", "pw")
    client = login(admin)
    entry = AuditEntry.objects.get(action="hold")
    assert client.get("/admin/anticheat/auditentry/").status_code == 200
    page = client.get(f"/admin/anticheat/auditentry/{entry.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
    client.post(f"/admin/anticheat/auditentry/{entry.pk}/change/", {"reason": "edited"})
    assert client.post(f"/admin/anticheat/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get("/admin/anticheat/auditentry/add/").status_code == 403
    assert AuditEntry.objects.get(pk=entry.pk).reason != "edited"
