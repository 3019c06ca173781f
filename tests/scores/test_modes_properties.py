"""Property: boards whose values may fall (latest; totals whose results subtract, clamped at
their floor: docs/encoding.md, "Values that fall") end,
after any interleaving of submissions (retries, duplicates, batches, results older than the
value they meet), projector batches, crashes before a commit and between the commit and the
Redis write, voids and full rebuilds, with Postgres and Redis holding exactly what the
plain-Python reference model holds for the matches still counting: on one Redis, and on the
local Redis Cluster with boards of 4 shards."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from anticheat.services import Actor, matches_void
from boards import index, selectors
from boards.receivers import mirror_accepted_scores
from boards.services import boards_rebuild, outbox_drain
from scores.models import Board, Match, PlayerValue
from scores.projection import batch_apply, pending_apply
from scores.selectors import cached_board
from scores.signals import score_accepted
from tests.conftest import game_with_boards, reset_results, set_keys
from tests.factories import SeasonFactory
from tests.reference import RefBoard, Reference
from tests.scores.test_projector_properties import SEASON

pytestmark = pytest.mark.usefixtures("topology")  # one Redis, and the cluster with sharded boards

BOARDS = [
    RefBoard("elo", "desc", "latest", 0, 5),
    RefBoard("lap", "asc", "latest", 10, 15),
    RefBoard("gold", "desc", "total", -4, 3),  # spent: never below 0
    RefBoard("debt", "desc", "total", -3, 2, min_total=-4),
]
# ties on ended_at (the match_id decides), seconds shared by different instants, a day boundary
MOMENTS = ["2026-11-01T00:00:00+00:00", "2026-11-01T00:00:00.500+00:00", "2026-11-01T00:00:01+00:00",
           "2026-11-01T23:59:59+00:00", "2026-11-02T00:00:00+00:00"]  # fmt: skip
PLAYERS = ["a", "B", "c"]
MATCH_IDS = ["m0", "m1", "M1", "m10", "m2", "z"]  # byte order: M1 < m0 < m1 < m10 < m2 < z

result = st.sampled_from(BOARDS).flatmap(
    lambda b: st.fixed_dictionaries(
        {
            "player": st.sampled_from(PLAYERS),
            "board": st.just(b.slug),
            "score": st.one_of(
                *[st.integers(min_value=b.min_score, max_value=b.max_score)] * 9, st.just(b.max_score + 1)
            ),
        }
    )
)
match = st.fixed_dictionaries(
    {
        "match_id": st.sampled_from(MATCH_IDS),
        "ended_at": st.sampled_from(MOMENTS),
        "results": st.lists(result, min_size=1, max_size=3),
    }
)
operation = st.one_of(
    st.tuples(st.just("one"), match),
    st.tuples(st.just("one"), match),
    st.tuples(st.just("batch"), st.lists(match, min_size=1, max_size=4)),
    st.tuples(st.just("retry"), st.integers(min_value=0, max_value=50)),
    st.tuples(st.just("project"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("project"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("crash"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("lost_redis"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("void"), st.integers(min_value=0, max_value=20)),
    st.tuples(st.just("void"), st.integers(min_value=0, max_value=20)),
    st.tuples(st.just("rebuild"), st.just(0)),
)


def _one(match_id: str, at: str, score: int, board: str = "elo", player: str = "a") -> dict:
    return {"match_id": match_id, "ended_at": at, "results": [{"player": player, "board": board, "score": score}]}


class Crash(Exception):
    """The projector's process dies before its batch commits."""


@pytest.fixture
def world(transactional_db, settings):
    settings.PROJECTOR_INLINE = False
    game, server = game_with_boards("modes", [(b, "unique") for b in BOARDS])
    SeasonFactory(game=game, slug=SEASON.slug, starts_at=SEASON.starts_at, ends_at=SEASON.ends_at)
    return game, server


def _without_redis_write(max_matches: int) -> None:
    score_accepted.disconnect(dispatch_uid="boards.mirror_accepted_scores")
    try:
        batch_apply(max_matches=max_matches)
    finally:
        score_accepted.connect(mirror_accepted_scores, dispatch_uid="boards.mirror_accepted_scores")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation, min_size=1, max_size=16))
# a fall, then an older result arriving late (it must not win), then the latest voided: the
# value before it comes back
@example(
    ops=[
        ("one", _one("m0", MOMENTS[0], 5)),
        ("one", _one("m1", MOMENTS[2], 1)),
        ("project", 4),
        ("one", _one("m2", MOMENTS[1], 3)),
        ("project", 4),
        ("void", 1),
    ]
)
# a fall across two batches: ZADD GT would keep the old value
@example(ops=[("one", _one("m0", MOMENTS[0], 5)), ("project", 4), ("one", _one("m1", MOMENTS[2], 1)), ("project", 4)])
# a total spent to its floor, then an earlier gain arriving late: clamped in the order played
@example(
    ops=[
        ("one", _one("m1", MOMENTS[2], -4, "gold")),
        ("project", 4),
        ("one", _one("m0", MOMENTS[0], 3, "gold")),
        ("project", 4),
        ("one", _one("m2", MOMENTS[3], 1, "gold")),
    ]
)
# equal ended_at: the larger match_id byte order is the latest, in one batch and across two
@example(ops=[("one", _one("m1", MOMENTS[0], 4)), ("one", _one("M1", MOMENTS[0], 2)), ("project", 4)])
@example(ops=[("one", _one("M1", MOMENTS[0], 2)), ("project", 4), ("one", _one("m1", MOMENTS[0], 4)), ("rebuild", 0)])
def test_boards_that_fall_under_any_interleaving_match_the_reference(world, ops) -> None:
    game, server = world
    reset_results()
    answers = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])
    stored: list[dict] = []
    voided: set[str] = set()
    sent: list[dict] = []
    url = "/api/v1/games/modes/matches"

    def expect(m: dict) -> tuple[int, str]:
        code = answers.submit(m)
        if code == 201:
            stored.append(m)
        status = "voided" if code == 200 and m["match_id"] in voided else "accepted"
        return code, status

    for kind, arg in ops:
        if kind == "retry":
            if not sent:
                continue
            kind, arg = "one", sent[arg % len(sent)]
        if kind == "one":
            sent.append(arg)
            code, status = expect(arg)
            response = server.post(url, arg)
            assert response.status_code == code, (arg, response.json())
            if code < 400:
                assert response.json()["status"] == status
        elif kind == "batch":
            sent.extend(arg)
            want = []
            for m in arg:
                code, status = expect(m)
                want.append((status, code == 200) if code < 400 else ("rejected", False))
            got = server.post(url + "/batch", {"matches": arg}).json()["results"]
            assert [(r["status"], r["duplicate"]) for r in got] == want, (arg, got)
        elif kind == "project":
            batch_apply(max_matches=arg)
        elif kind == "crash":
            with pytest.raises(Crash), transaction.atomic():
                batch_apply(max_matches=arg)
                raise Crash
        elif kind == "lost_redis":
            _without_redis_write(arg)
        elif kind == "void" and stored:
            match_id = stored[arg % len(stored)]["match_id"]
            found = Match.objects.get(game=game, match_id=match_id)
            matches_void(game=game, match_pks=[found.pk], reason="property", actor=Actor("test"))
            voided.add(match_id)
        elif kind == "rebuild":
            boards_rebuild()

    pending_apply()
    outbox_drain(grace_seconds=0)
    ref = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])
    for m in stored:
        if m["match_id"] not in voided:
            ref.submit(m)
    values = {
        (pv.board.slug, pv.window, pv.player.external_id): (pv.value, pv.reached_at)
        for pv in PlayerValue.objects.select_related("board", "player")
    }
    assert values == {k: (v.value, v.reached_at) for k, v in ref.values.items()}
    for board in Board.objects.filter(game=game):
        windows = {w for b, w in ref.windows_with_values() if b == board.slug} | {"all"}
        for window in windows:
            want = ref.order(board.slug, window)
            got = selectors.board_range(cached_board("modes", board_slug=board.slug), window=window, start=0, stop=50)
            assert [e.external_id for e in got] == want, (board.slug, window)
            assert [e.value for e in got] == [ref.values[(board.slug, window, p)].value for p in want]
            assert sum(index.index().zcard(k) for k in set_keys(board.id, window)) == len(want)
