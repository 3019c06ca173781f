"""Property: after any accepted matches and any voids, holds and approvals, Postgres values and
the Redis order equal a reference model that simply replays the matches still counting."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anticheat.rules import Verdict
from anticheat.services import Actor, match_approve, match_hold, matches_void
from boards import index, selectors
from boards.services import outbox_drain
from scores.models import Board, Match, PlayerValue
from scores.selectors import cached_board
from tests.anticheat.conftest import URL
from tests.conftest import reset_results, set_keys
from tests.properties import examples
from tests.reference import RefBoard, Reference, RefSeason

pytestmark = pytest.mark.usefixtures("topology")  # one Redis, and the cluster with sharded boards

BOARDS = [RefBoard("free", "desc", "best", 0, 10_000_000), RefBoard("freesum", "desc", "total", 0, 1000)]
SEASON = RefSeason("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC))
MOMENTS = ["2026-10-31T23:59:59Z", "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-11-02T10:00:00Z"]

result = st.fixed_dictionaries(
    {
        "player": st.sampled_from(["a", "b", "c"]),
        "board": st.sampled_from(["free", "freesum"]),
        "score": st.integers(min_value=0, max_value=5),
    }
)
matches = st.lists(
    st.tuples(st.sampled_from(MOMENTS), st.lists(result, min_size=1, max_size=3)), min_size=1, max_size=8
)
moves = st.lists(st.tuples(st.sampled_from(["void", "hold", "approve"]), st.integers(0, 7)), max_size=8)


@settings(
    max_examples=examples(loop=15, deep=40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sent=matches, ops=moves)
def test_void_hold_approve_match_the_reference(arena, gs, sent, ops) -> None:
    reset_results()
    bodies = []
    for i, (at, results) in enumerate(sent):
        body = {"match_id": f"m{i}", "ended_at": at, "results": results}
        assert gs.post(f"{URL}/matches", body).status_code == 201
        bodies.append(body)
    status = {b["match_id"]: "accepted" for b in bodies}
    decided: set[str] = set()  # approved or voided by a person: no hold moves them again
    actor = Actor("property test")
    for op, n in ops:
        match = Match.objects.select_related("game").get(match_id=f"m{n % len(bodies)}")
        if op == "void":
            matches_void(game=arena, match_pks=[match.pk], reason="test", actor=actor)
            status[match.match_id] = "voided"
            decided.add(match.match_id)
        elif op == "hold" and status[match.match_id] == "accepted":
            moved = match_hold(match=match, verdict=Verdict("hold", "test", "test"), actor=Actor.rules("test"))
            assert moved == (match.match_id not in decided)
            if moved:
                status[match.match_id] = "held"
        elif op == "approve" and status[match.match_id] != "voided":
            match_approve(match=match, actor=actor)
            status[match.match_id] = "accepted"
            decided.add(match.match_id)
    ref = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])
    for body in bodies:
        if status[body["match_id"]] == "accepted":
            ref.submit(body)
    stored = {
        (pv.board.slug, pv.window, pv.player.external_id): pv.value
        for pv in PlayerValue.objects.select_related("board", "player").filter(board__slug__in=["free", "freesum"])
    }
    assert stored == {k: v.value for k, v in ref.values.items()}
    assert dict(Match.objects.values_list("match_id", "status")) == status
    outbox_drain(grace_seconds=0)
    for board in Board.objects.filter(slug__in=["free", "freesum"]):
        windows = {w for b, w in ref.windows_with_values() if b == board.slug} | set(
            PlayerValue.objects.filter(board=board).values_list("window", flat=True)
        )
        for window in windows | {"all"}:
            want = ref.order(board.slug, window)
            got = selectors.board_range(cached_board("arena", board_slug=board.slug), window=window, start=0, stop=50)
            assert [e.external_id for e in got] == want, (board.slug, window)
            assert sum(index.index().zcard(k) for k in set_keys(board.id, window)) == len(want)


def _ref(bodies: list[dict], voided: set[str]) -> Reference:
    ref = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])
    for body in bodies:
        if body["match_id"] not in voided:
            ref.submit(body)
    return ref


@settings(
    max_examples=examples(loop=12, deep=30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sent=matches, pick=st.integers(0, 7))
def test_a_void_preview_matches_the_reference_before_and_after_and_the_confirm_agrees(arena, gs, sent, pick) -> None:
    from anticheat.previews import void_confirm, void_preview

    reset_results()
    bodies = [{"match_id": f"m{i}", "ended_at": at, "results": results} for i, (at, results) in enumerate(sent)]
    for body in bodies:
        assert gs.post(f"{URL}/matches", body).status_code == 201
    target = bodies[pick % len(bodies)]["match_id"]
    match = Match.objects.get(match_id=target)

    def apply(reason: str) -> list[int]:
        return matches_void(game=arena, match_pks=[match.pk], reason=reason, actor=Actor("property test"))

    preview = void_preview(game=arena, apply=apply)
    before, after = _ref(bodies, set()), _ref(bodies, {target})
    for c in preview.changes:
        for ref, seen in ((before, c.before), (after, c.after)):
            order = ref.order(c.board, c.window)
            assert seen.rank == (order.index(c.player) + 1 if c.player in order else None), (c, order)
            assert seen.total == len(order)
            value = ref.values.get((c.board, c.window, c.player))
            assert seen.value == (value.value if value else None)
    # every value the void changes is in the preview (the checks above say with which numbers)
    shown = {(c.board, c.window, c.player) for c in preview.changes}
    old, new = ({k: v.value for k, v in ref.values.items()} for ref in (before, after))
    assert {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)} <= shown
    assert void_confirm(game=arena, apply=apply, reason="confirmed", token=preview.token) == [match.pk]
    stored = {
        (pv.board.slug, pv.window, pv.player.external_id): pv.value
        for pv in PlayerValue.objects.select_related("board", "player").filter(board__slug__in=["free", "freesum"])
    }
    assert stored == {k: v.value for k, v in after.values.items()}
