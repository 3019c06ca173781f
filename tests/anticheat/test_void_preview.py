"""A preview before every void (docs/moderation.md, "Preview, then confirm"): the matches, every
player in them (opponents included), and per board window their value and rank before and
after, computed by running the real void and rolling it back; the confirm applies exactly that."""

from __future__ import annotations

import pytest
from django.test import Client

from anticheat import previews, services
from anticheat.models import AuditEntry
from scores.models import Match, PlayerValue
from scores.selectors import cached_board, durable_standings
from seasons.models import WindowFreeze
from seasons.services import window_freeze
from tests.anticheat.conftest import drain, submit, top

MATCHES = "/admin/scores/match/"
WINDOWS = ["all", "season:s1", "monthly:2026-11", "weekly:2026-W48", "daily:2026-11-28"]


@pytest.fixture(autouse=True)
def _group(moderators_group) -> None:
    """Every test here has the data migrations' moderators group."""


@pytest.fixture
def played(gs) -> Match:
    """free board: a 500, d 450, b 400, c 300; m1 holds a's, b's and c's results."""
    submit(gs, "m0", [{"player": "a", "board": "free", "score": 100}], at="2026-11-28T10:00:00Z")
    submit(gs, "md", [{"player": "d", "board": "free", "score": 450}], at="2026-11-28T11:00:00Z")
    m1 = [{"player": p, "board": "free", "score": s} for p, s in (("a", 500), ("b", 400), ("c", 300))]
    assert submit(gs, "m1", m1).status_code == 201
    return Match.objects.get(match_id="m1")


def _state() -> tuple:
    values = sorted(PlayerValue.objects.values_list("board_id", "window", "player_id", "encoded"))
    return values, list(Match.objects.order_by("pk").values_list("status", flat=True)), AuditEntry.objects.count()


def _apply(match: Match, actor: services.Actor):
    return lambda reason: services.matches_void(game=match.game, match_pks=[match.pk], reason=reason, actor=actor)


def test_preview_names_every_player_and_each_window_before_and_after_and_changes_nothing(played, moderator) -> None:
    before = _state()
    board = top("free")
    preview = previews.void_preview(game=played.game, apply=_apply(played, services.Actor.of_user(moderator)))
    assert _state() == before and top("free") == board  # rolled back, Redis untouched
    assert [m.match_id for m in preview.matches] == ["m1"]
    assert [(p.external_id, p.matches) for p in preview.players] == [("a", 1), ("b", 1), ("c", 1)]
    assert [w for _, w, _ in preview.changes_by_window()] == WINDOWS
    for _, _, rows in preview.changes_by_window():
        got = {c.player: (c.before.value, c.before.rank, c.after.value, c.after.rank) for c in rows}
        assert got == {"a": (500, 1, 100, 2), "b": (400, 3, None, None), "c": (300, 4, None, None)}
        assert {c.before.total for c in rows} == {4} and {c.after.total for c in rows} == {2}
    assert not preview.refreezes


def test_confirm_applies_exactly_what_the_preview_showed(played, moderator) -> None:
    actor = services.Actor.of_user(moderator)
    preview = previews.void_preview(game=played.game, apply=_apply(played, actor))
    voided = previews.void_confirm(game=played.game, apply=_apply(played, actor), reason="bot", token=preview.token)
    assert voided == [played.pk]
    board = cached_board("arena", board_slug="free")
    for change in preview.changes:
        found, _ = durable_standings(board, window=change.window, pks=[change.player_id])
        if change.after.value is None:
            assert change.player_id not in found
        else:
            assert found[change.player_id][1] + 1 == change.after.rank
            value = PlayerValue.objects.get(board_id=board.id, window=change.window, player_id=change.player_id).value
            assert value == change.after.value
    assert top("free") == [("d", 450), ("a", 100)]  # the board as the public pages read it
    assert AuditEntry.objects.get(action="void").reason == "bot"


def test_confirm_refuses_when_the_boards_changed_since_the_preview(played, moderator, gs) -> None:
    actor = services.Actor.of_user(moderator)
    preview = previews.void_preview(game=played.game, apply=_apply(played, actor))
    submit(gs, "late", [{"player": "b", "board": "free", "score": 420}], at="2026-11-28T13:00:00Z")
    before = _state()
    with pytest.raises(previews.PreviewOutdated) as outdated:
        previews.void_confirm(game=played.game, apply=_apply(played, actor), reason="bot", token=preview.token)
    assert _state() == before  # nothing voided
    fresh = {(c.window, c.player): (c.after.value, c.after.rank) for c in outdated.value.fresh.changes}
    assert fresh[("all", "b")] == (420, 2)


def test_preview_shows_the_refreeze_of_a_frozen_window_and_keeps_none(played, moderator) -> None:
    board = cached_board("arena", board_slug="free")
    window_freeze(board=board, window="daily:2026-11-28", reason="window closed")
    preview = previews.void_preview(game=played.game, apply=_apply(played, services.Actor.of_user(moderator)))
    assert [(f.window, f.version, f.moved) for f in preview.refreezes] == [("daily:2026-11-28", 2, 4)]
    assert WindowFreeze.objects.filter(version=2).count() == 0


def test_admin_void_from_the_match_list_previews_then_confirms(played, moderator) -> None:
    client = Client()
    client.force_login(moderator)
    page = client.post(MATCHES, {"action": "void", "_selected_action": [played.pk]}, follow=True)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Players affected" in html and ">b<" in html and ">c<" in html and "removed" in html
    assert Match.objects.get(pk=played.pk).status == "accepted"
    url = page.redirect_chain[-1][0]
    missing_reason = client.post(url, {"confirm": "1", "token": page.context["preview"].token, "reason": " "})
    assert b"Say why" in missing_reason.content and Match.objects.get(pk=played.pk).status == "accepted"
    done = client.post(url, {"confirm": "1", "token": page.context["preview"].token, "reason": "bot"}, follow=True)
    assert b"Voided 1 match" in done.content
    assert Match.objects.get(pk=played.pk).status == "voided"
    assert top("free") == [("d", 450), ("a", 100)]


def test_a_forged_confirmation_is_refused(played, moderator) -> None:
    client = Client()
    client.force_login(moderator)
    response = client.post(f"{MATCHES}void/?ids={played.pk}", {"confirm": "1", "token": "x:y", "reason": "bot"})
    assert response.status_code == 400 and Match.objects.get(pk=played.pk).status == "accepted"


def test_bulk_void_of_a_player_previews_the_opponents_then_applies(played, moderator, arena) -> None:
    client = Client()
    client.force_login(moderator)
    form = {"game": arena.pk, "player": "c", "since": "2026-11-28 00:00", "until": "2026-11-29 00:00"}
    page = client.post(MATCHES + "bulk-void/", {**form, "preview": "1"})
    preview = page.context["preview"]
    assert [m.match_id for m in preview.matches] == ["m1"]
    assert [p.external_id for p in preview.players] == ["a", "b", "c"]
    assert Match.objects.get(pk=played.pk).status == "accepted"
    client.post(MATCHES + "bulk-void/", {**form, "reason": "account sold", "confirm": "1", "token": preview.token})
    assert Match.objects.get(pk=played.pk).status == "voided"
    drain()
    assert top("free") == [("d", 450), ("a", 100)]
    bulk = AuditEntry.objects.get(action="void_bulk")
    assert bulk.details["player"] == "c"


def test_approve_from_the_match_page(gs, moderator) -> None:
    submit(gs, "h0", [{"player": "a", "board": "rating", "score": 100}])
    assert submit(gs, "h1", [{"player": "a", "board": "rating", "score": 5000}]).json()["status"] == "held"
    held = Match.objects.get(match_id="h1")
    client = Client()
    client.force_login(moderator)
    page = client.get(f"{MATCHES}{held.pk}/change/")
    assert b"Approve" in page.content and b"Void" in page.content and b'name="_save"' not in page.content
    client.post(f"{MATCHES}{held.pk}/approve/")
    assert Match.objects.get(pk=held.pk).status == "accepted"
    assert top("rating") == [("a", 5000)]


def test_an_accepted_unflagged_match_offers_no_approve_and_odd_ids_do_not_fail(played, moderator) -> None:
    client = Client()
    client.force_login(moderator)
    page = client.get(f"{MATCHES}{played.pk}/change/").content.decode()
    assert "Void…" in page and "approve-button" not in page
    # no such object: 404, as another game's object is (docs/moderation.md, "Moderators per game")
    assert client.get(f"{MATCHES}abc/change/").status_code == 404
    assert client.get(f"{MATCHES}void/?ids=x,y").status_code == 302  # back to the list, with a message
