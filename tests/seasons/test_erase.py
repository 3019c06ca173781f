"""Deleting a player in the admin used to cascade through results, values and frozen
standings behind the boards' back (docs/reliability.md, erasing a player). Scored rows are protected now; a
player leaves through an erasure that voids their matches the normal way."""

from __future__ import annotations

import io
import logging

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db.models import ProtectedError
from django.test import Client

from anticheat.models import AuditEntry
from anticheat.services import Actor, player_erase
from boards.selectors import board_range
from boards.services import outbox_drain
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board, Game, Match, Player, PlayerValue
from scores.selectors import cached_board
from seasons import services
from seasons.models import FrozenStanding, WindowFreeze
from tests.boards.conftest import URL, player_client, submit
from tests.conftest import SignedClient
from tests.seasons.conftest import AFTER_GRACE, DAY

pytestmark = pytest.mark.usefixtures("real_projector")  # the results reach the boards as users' do


@pytest.fixture
def admin(transactional_db) -> Client:
    User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.login(username="root", password="pw")
    return client


def top_players(window: str = "all") -> list[str]:
    """The board as Redis holds it now (/top may serve a page up to a second old)."""
    return [
        e.external_id for e in board_range(cached_board("chess", board_slug="rating"), window=window, start=0, stop=100)
    ]


def test_scored_rows_cannot_be_deleted_by_a_cascade(day, game) -> None:
    services.windows_close(now=AFTER_GRACE)
    player = Player.objects.get(external_id="p0")
    for doomed in (player, Match.objects.get(match_id="d1"), Board.objects.get(game=game, slug="rating"), game):
        with pytest.raises(ProtectedError):
            doomed.delete()
    assert FrozenStanding.objects.filter(player=player).exists() and PlayerValue.objects.filter(player=player).exists()


def test_the_admin_offers_no_delete_for_players(day, admin: Client) -> None:
    player = Player.objects.get(external_id="p0")
    page = admin.get(f"/admin/scores/player/{player.pk}/change/")
    assert page.status_code == 200 and b"/delete/" not in page.content
    assert admin.post(f"/admin/scores/player/{player.pk}/delete/", {"post": "yes"}).status_code == 403
    listing = admin.get("/admin/scores/player/")
    assert b'value="delete_selected"' not in listing.content and b'value="erase"' in listing.content
    assert Player.objects.filter(pk=player.pk).exists()


def test_erasing_a_top_player_voids_their_matches_and_refreezes_with_history(day, game, admin: Client) -> None:
    services.windows_close(now=AFTER_GRACE)
    before = WindowFreeze.objects.get(board__slug="rating", window=f"daily:{DAY}")
    # "early" is first on the day: a match of their own (d2)
    early = Player.objects.get(external_id="early")
    assert top_players(f"daily:{DAY}")[0] == "early"

    response = admin.post(
        "/admin/scores/player/",
        {"action": "erase", "_selected_action": [early.pk], "apply": "1", "reason": "account deleted on request"},
        follow=True,
    )
    assert response.status_code == 200 and b"Erased 1 player" in response.content
    outbox_drain(grace_seconds=0)

    assert Match.objects.get(match_id="d2").status == "voided"
    assert "early" not in top_players() and "early" not in top_players(f"daily:{DAY}")
    versions = list(WindowFreeze.objects.filter(board__slug="rating", window=f"daily:{DAY}").order_by("version"))
    assert [v.version for v in versions] == [1, 2] and versions[0].pk == before.pk
    assert versions[0].entries == 10 and versions[1].entries == 9  # the earlier version is kept whole
    frozen = Client().get(URL + f"/boards/rating/standings/daily:{DAY}").json()
    assert [e["position"] for e in frozen["entries"]] == list(range(1, 10))  # no hole
    assert "early" not in [e["player"] for e in frozen["entries"]]
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"void", "void_bulk", "erase_player"} <= actions
    erased = AuditEntry.objects.get(action="erase_player")
    assert erased.player_id == early.pk and erased.reason == "account deleted on request" and "root" in erased.actor
    early.refresh_from_db()
    assert early.display_name == ""


def test_erasure_is_refused_without_a_reason_and_without_the_permission(day) -> None:
    with pytest.raises(ValueError):
        player_erase(player=Player.objects.get(external_id="p0"), reason=" ", actor=Actor.rules("test"))
    User.objects.create_user("viewer", password="pw", is_staff=True)
    client = Client()
    client.login(username="viewer", password="pw")
    player = Player.objects.get(external_id="p0")
    client.post(
        "/admin/scores/player/", {"action": "erase", "_selected_action": [player.pk], "apply": "1", "reason": "x"}
    )
    assert Match.objects.get(match_id="d1").status == "accepted"


def test_reads_skip_a_ranked_member_without_a_player_row(server: SignedClient, game, caplog) -> None:
    """A sorted set that lost sync with Postgres (a row deleted outside the service) is read
    around the stranger: logged, never a 500."""
    submit(
        server,
        "m1",
        [{"player": "p1", "board": "rating", "score": 500}, {"player": "p2", "board": "rating", "score": 100}],
    )
    board = cached_board("chess", board_slug="rating")
    get_redis().zadd(keys.board_key(board.id, "all"), {"999999": 2**52})  # above everyone
    with caplog.at_level(logging.WARNING, logger="boards.selectors"):
        body = Client().get(URL + "/boards/rating/top").json()
    assert [(e["rank"], e["player"]) for e in body["entries"]] == [(2, "p1"), (3, "p2")]
    assert "without a player row" in caplog.text
    assert player_client("p1").get(URL + "/boards/rating/players/p1").status_code == 200
    assert player_client("p1").get(URL + "/boards/rating/players/p1/friends").status_code == 200
    assert Client().get("/games/chess/boards/rating/").status_code == 200


def test_close_windows_refuses_a_now_ahead_of_the_clock_without_force(day) -> None:
    from datetime import timedelta

    from django.utils import timezone

    tomorrow = (timezone.now() + timedelta(days=1)).replace(hour=0, minute=10, second=0, microsecond=0)
    with pytest.raises(CommandError, match="ahead of the clock"):
        call_command("close_windows", "--now", tomorrow.isoformat(), stdout=io.StringIO())
    assert not WindowFreeze.objects.exists()
    out = io.StringIO()
    call_command("close_windows", "--now", tomorrow.isoformat(), "--force", stdout=out)
    assert "frozen" in out.getvalue() and WindowFreeze.objects.exists()
    assert Game.objects.exists()
