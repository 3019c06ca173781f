"""Moderators have the last word (docs/api.md §8, docs/moderation.md): a match a person approved
is never held again, and one they voided never revived, by any automatic check, then or later;
the audit log keeps saying who decided."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anticheat.after import matches_check
from anticheat.models import AuditEntry
from anticheat.rules import Verdict
from anticheat.services import Actor, MatchVoided, match_approve, match_hold, matches_void
from anticheat.tasks import check_pending
from scores.models import Match, PlayerValue
from scores.services import player_token_issue
from tests.anticheat.conftest import URL, submit, top
from tests.conftest import reset_results
from tests.factories import BoardFactory
from tests.properties import examples

# one Redis, and the cluster with sharded boards; submissions through the real projector process
pytestmark = pytest.mark.usefixtures("topology", "real_projector")


@pytest.fixture
def steady(arena):
    """A best board with the default hold thresholds (both history rules on) and no rate
    limit, so one player can post 20 results in a row."""
    return BoardFactory(game=arena, slug="steady", anticheat={"max_matches_per_minute": 0})


def _steady_history(gs, player: str = "a") -> None:
    for i in range(20):
        response = submit(
            gs, f"s{i}", [{"player": player, "board": "steady", "score": 5000 + i}], at=f"2026-11-28T10:{i:02d}:00Z"
        )
        assert response.status_code == 201 and response.json()["status"] == "accepted", response.content


def test_an_approved_outlier_stays_approved_after_the_checks_run(arena, gs, mod, steady, settings) -> None:
    """The reproduction: 20 steady results, then 9,999,999 (held on arrival); the moderator's
    approval says accepted, and the after-the-fact checks that the approval queues (the same
    drain a worker runs) leave it so: the board and the player's rank keep showing it."""
    settings.ANTICHEAT_ASYNC_CHECKS = True
    _steady_history(gs)
    with patch("anticheat.tasks.check_pending.apply_async"):  # the drain is run by hand below
        held = submit(gs, "big", [{"player": "a", "board": "steady", "score": 9_999_999}], at="2026-11-28T11:00:00Z")
        assert held.status_code == 201 and held.json()["status"] == "held"
        assert top("steady") == [("a", 5019)]
        approved = mod.post(f"{URL}/matches/big/approve", {"reason": "reviewed"})
        assert approved.status_code == 200 and approved.json() == {"match_id": "big", "status": "accepted"}
    check_pending()  # what the worker runs half a second after the approval
    assert matches_check(match_pks=list(Match.objects.values_list("pk", flat=True))) == 0  # and any later run
    big = Match.objects.get(match_id="big")
    assert big.status == "accepted" and big.decided_by.startswith(f"server key {mod.key_id}")
    assert top("steady") == [("a", 9_999_999)]
    token, _ = player_token_issue(player=arena.players.get(external_id="a"))
    me = Client(headers={"Authorization": f"Bearer {token}"}).get(f"{URL}/boards/steady/players/a")
    assert me.status_code == 200 and (me.json()["score"], me.json()["rank"]) == (9_999_999, 1)
    trail = list(AuditEntry.objects.filter(match=big).order_by("id").values_list("action", "actor", "actor_key"))
    assert [action for action, _, _ in trail] == ["hold", "approve"]
    assert trail[0][1].startswith("anti-cheat rules")  # the hold on arrival, by the rules
    assert AuditEntry.objects.get(match=big, action="approve").actor_key.key_id == mod.key_id


def test_an_approval_of_a_counted_match_is_harmless_and_shields_it(arena, gs, mod, steady) -> None:
    """Approving a match that counts already changes no value, and the checks leave it alone
    afterwards, although they would hold it otherwise."""
    _steady_history(gs)
    steady.anticheat = {"max_matches_per_minute": 0, "history_factor": 0}  # let the outlier in
    steady.save()
    from scores.selectors import config_cache_clear

    config_cache_clear()
    accepted = submit(gs, "big", [{"player": "a", "board": "steady", "score": 9_999_999}], at="2026-11-28T11:00:00Z")
    assert accepted.json()["status"] == "accepted"
    before = dict(PlayerValue.objects.filter(board=steady).values_list("window", "value"))
    assert mod.post(f"{URL}/matches/big/approve", {}).json() == {"match_id": "big", "status": "accepted"}
    assert dict(PlayerValue.objects.filter(board=steady).values_list("window", "value")) == before
    assert matches_check(match_pks=list(Match.objects.values_list("pk", flat=True))) == 0
    assert Match.objects.get(match_id="big").status == "accepted"
    assert top("steady") == [("a", 9_999_999)]


def test_a_hold_after_an_approval_changes_nothing(arena, gs, mod) -> None:
    submit(gs, "m1", [{"player": "a", "board": "free", "score": 900}])
    assert mod.post(f"{URL}/matches/m1/approve", {}).status_code == 200
    match = Match.objects.select_related("game").get(match_id="m1")
    assert match_hold(match=match, verdict=Verdict("hold", "test", "looks odd"), actor=Actor.rules("test")) is False
    assert Match.objects.get(match_id="m1").status == "accepted"
    assert top("free") == [("a", 900)]
    assert not AuditEntry.objects.filter(action="hold").exists()


def test_a_voided_match_is_never_revived(arena, gs, mod, steady) -> None:
    _steady_history(gs)
    submit(gs, "big", [{"player": "a", "board": "steady", "score": 9_999_999}], at="2026-11-28T11:00:00Z")
    assert mod.post(f"{URL}/matches/big/void", {"reason": "cheating"}).json()["status"] == "voided"
    assert mod.post(f"{URL}/matches/big/approve", {}).status_code == 409
    matches_check(match_pks=list(Match.objects.values_list("pk", flat=True)))
    big = Match.objects.get(match_id="big")
    assert big.status == "voided" and big.decided_by.startswith(f"server key {mod.key_id}")
    assert top("steady") == [("a", 5019)]


# --- the property ----------------------------------------------------------------------------

PERSON = Actor("moderator mo")
# "check": the after-the-fact checks over every match; "autohold": a check holding one match
ops = st.lists(
    st.tuples(
        st.sampled_from(["submit_low", "submit_high", "autohold", "check", "approve", "void"]), st.integers(0, 9)
    ),
    min_size=1,
    max_size=14,
)


@settings(
    max_examples=examples(loop=12, deep=25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=ops)
def test_every_decided_match_stays_as_the_last_person_decided(arena, gs, steady, ops) -> None:
    """Any interleaving of submissions (steady ones, and outliers the checks hold), automatic
    holds, check runs, approvals and voids: each match a person decided ends as they last
    decided (a void being final), the checks only ever hold undecided accepted matches, and
    the board shows the best of what counts."""
    reset_results()
    steady.anticheat = {"max_matches_per_minute": 0, "history_factor": 0}  # outliers arrive accepted
    steady.save()
    from scores.selectors import config_cache_clear

    config_cache_clear()
    for i in range(5):  # the history the after-the-fact rule needs
        submit(gs, f"seed{i}", [{"player": "a", "board": "steady", "score": 100 + i}], at=f"2026-11-28T09:0{i}:00Z")
    status: dict[str, str] = dict(Match.objects.values_list("match_id", "status"))
    decided: dict[str, str] = {}  # match_id -> the last person's decision as a status
    n = 0
    for op, k in ops:
        names = sorted(status)
        if op in ("submit_low", "submit_high"):
            score = 100 if op == "submit_low" else 100_000
            body = [{"player": "a", "board": "steady", "score": score}]
            response = submit(gs, f"m{n}", body, at=f"2026-11-28T10:{n:02d}:00Z")
            assert response.json()["status"] == "accepted"
            status[f"m{n}"] = "accepted"
            n += 1
            continue
        name = names[k % len(names)]
        match = Match.objects.select_related("game").get(match_id=name)
        if op == "autohold":
            moved = match_hold(match=match, verdict=Verdict("hold", "test", "odd"), actor=Actor.rules("test"))
            assert moved == (status[name] == "accepted" and name not in decided)
            if moved:
                status[name] = "held"
        elif op == "check":
            matches_check(match_pks=list(Match.objects.values_list("pk", flat=True)))
            now = dict(Match.objects.values_list("match_id", "status"))
            for m, was in status.items():
                if m in decided or was != "accepted":
                    assert now[m] == was, (m, was, now[m])
                else:
                    assert now[m] in ("accepted", "held")
            status = now
        elif op == "approve":
            if status[name] == "voided":
                with pytest.raises(MatchVoided):
                    match_approve(match=match, actor=PERSON)
            else:
                match_approve(match=match, actor=PERSON)
                status[name] = decided[name] = "accepted"
        elif op == "void":
            matches_void(game=arena, match_pks=[match.pk], reason="test", actor=PERSON)
            status[name] = decided[name] = "voided"
    stored = dict(Match.objects.values_list("match_id", "status"))
    assert stored == status
    for name, decision in decided.items():
        assert stored[name] == decision, name
    assert set(Match.objects.exclude(decided_at=None).values_list("match_id", flat=True)) == set(decided)
    scores = {"seed0": 100, "seed1": 101, "seed2": 102, "seed3": 103, "seed4": 104}
    for op_name in status:
        if op_name.startswith("m"):
            scores[op_name] = Match.objects.get(match_id=op_name).results.get().score
    counting = [scores[m] for m, s in stored.items() if s == "accepted"]
    best = max(counting) if counting else None
    value = PlayerValue.objects.filter(board=steady, window="all").values_list("value", flat=True).first()
    assert value == best
    assert top("steady") == ([("a", best)] if best is not None else [])
