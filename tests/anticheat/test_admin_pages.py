"""The admin pages a moderator works from: match search, the player page, the audit log with its
targets, and a corrected frozen window's page (who moved, and why)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from anticheat import services
from anticheat.models import AuditEntry
from scores import windows
from scores.models import Board, Match, Player, ServerKey
from scores.selectors import cached_board, game_config
from seasons.models import WindowFreeze
from seasons.services import window_freeze
from tests.anticheat.conftest import submit


@pytest.fixture
def signed_in(moderator) -> Client:
    client = Client()
    client.force_login(moderator)
    return client


@pytest.fixture
def played(gs, arena) -> None:
    submit(gs, "m1", [{"player": "ana", "board": "free", "score": 500, "display_name": "Ana Top"},
                      {"player": "bo", "board": "free", "score": 400}], at="2026-11-28T10:00:00Z")  # fmt: skip
    submit(gs, "m2", [{"player": "bo", "board": "free", "score": 450}], at="2026-11-28T11:00:00Z")
    submit(gs, "m3", [{"player": "cy", "board": "freesum", "score": 10}], at="2026-11-29T10:00:00Z")


def _listed(client: Client, **params) -> list[str]:
    page = client.get("/admin/scores/match/", params)
    assert page.status_code == 200, page.content
    return sorted(m.match_id for m in page.context["cl"].result_list)


def test_matches_are_found_by_player_id_name_key_board_and_time(signed_in, played) -> None:
    assert _listed(signed_in, q="bo") == ["m1", "m2"]
    assert _listed(signed_in, q="ana top") == ["m1"]  # the start of a display name, any case
    assert _listed(signed_in, q="m3") == ["m3"]
    key = ServerKey.objects.get(name="eu-1")
    assert _listed(signed_in, q=key.key_id) == ["m1", "m2", "m3"]
    assert _listed(signed_in, board=Board.objects.get(slug="freesum").pk) == ["m3"]
    assert _listed(signed_in, ended_from="2026-11-28 10:30", ended_to="2026-11-29") == ["m2"]
    assert _listed(signed_in, q="bo", ended_from="2026-11-28T10:30:00") == ["m2"]
    refused = signed_in.get("/admin/scores/match/", {"ended_from": "yesterday"})
    assert refused.status_code == 302 and refused["Location"].endswith("?e=1")  # the admin's "incorrect filter" page
    page = signed_in.get("/admin/scores/match/", {"q": "bo"}).content.decode()
    assert "Ana Top (ana), bo" in page  # the players column


def test_the_player_page_lists_results_newest_first_with_links_and_ranks(signed_in, played) -> None:
    bo = Player.objects.get(external_id="bo")
    page = signed_in.get(f"/admin/scores/player/{bo.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    m1, m2 = (Match.objects.get(match_id=m) for m in ("m1", "m2"))
    assert html.index(f"/admin/scores/match/{m2.pk}/change/") < html.index(f"/admin/scores/match/{m1.pk}/change/")
    assert "all: <strong>#2</strong> 450" in html  # Ana 500 is first
    # current windows only: bo played on 2026-11-28, so today's daily window has no score of his
    free = game_config(bo.game).boards["free"]
    today = windows.resolve("daily", timezone.now(), free.reset_timezone, free.windows, free.seasons)
    assert f"{today}: <strong>no score</strong>" in html and "daily:2026-11-28" not in html


def test_inline_results_and_boards_read_as_a_moderator_reads_them(signed_in, played) -> None:
    m1 = Match.objects.get(match_id="m1")
    html = signed_in.get(f"/admin/scores/match/{m1.pk}/change/").content.decode()
    assert "Ana Top (ana)" in html and 'name="_save"' not in html
    result = m1.results.select_related("player", "board").get(player__external_id="ana")
    assert str(result) == "Ana Top (ana) on free: 500"
    assert str(result.board) == "arena/free"


def test_the_audit_log_shows_targets_as_columns_with_filters(signed_in, played, mod) -> None:
    mod.post("/api/v1/games/arena/matches/m2/void", {"reason": "replayed"})
    user = User.objects.get(username="mo")
    bo = Player.objects.get(external_id="bo")
    services.matches_void_by_player(
        player=bo,
        since=Match.objects.get(match_id="m1").ended_at,
        until=Match.objects.get(match_id="m3").ended_at,
        reason="account sold",
        actor=services.Actor.of_user(user),
    )
    page = signed_in.get("/admin/anticheat/auditentry/")
    html = page.content.decode()
    bulk = AuditEntry.objects.get(action="void_bulk")
    assert f"/admin/scores/player/?q=bo&amp;game__id__exact={bulk.game_id}" in html  # bulk: its player target
    m2 = Match.objects.get(match_id="m2")
    assert f"/admin/scores/match/{m2.pk}/change/" in html
    by_keys = signed_in.get("/admin/anticheat/auditentry/", {"actor": "keys"}).context["cl"].result_list
    assert [e.match_ref for e in by_keys] == ["m2"]
    by_user = signed_in.get("/admin/anticheat/auditentry/", {"actor": f"user:{user.pk}"}).context["cl"].result_list
    assert {e.action for e in by_user} == {"void", "void_bulk"}
    searched = signed_in.get("/admin/anticheat/auditentry/", {"q": "bo"}).context["cl"].result_list
    assert {e.action for e in searched} >= {"void_bulk"}
    assert signed_in.get("/admin/anticheat/auditentry/", {"action__exact": "void"}).status_code == 200


def test_a_corrected_frozen_window_shows_who_moved_and_why(signed_in, played, mod) -> None:
    board = cached_board("arena", board_slug="free")
    window_freeze(board=board, window="daily:2026-11-28", reason="window closed")
    assert mod.post("/api/v1/games/arena/matches/m1/void", {"reason": "aimbot"}).status_code == 200
    v2 = WindowFreeze.objects.get(window="daily:2026-11-28", version=2)
    html = signed_in.get(f"/admin/seasons/windowfreeze/{v2.pk}/change/").content.decode()
    assert "aimbot" in html and "voided by server key" in html  # why: the audit entry
    assert "#1 (position 1), 500" in html and "removed" in html  # ana: gone from the corrected version
    assert "#2 (position 2), 450" in html and "#1 (position 1), 450" in html and "▲ 1" in html  # bo moved up
    assert "v2 (corrected)" in signed_in.get("/admin/seasons/windowfreeze/").content.decode()
    audit = signed_in.get("/admin/anticheat/auditentry/").content.decode()
    assert f"/admin/seasons/windowfreeze/{v2.pk}/change/" in audit  # the void's re-frozen window
