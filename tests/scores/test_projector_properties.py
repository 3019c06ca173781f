"""Property: any interleaving of submissions (retries, duplicates, conflicts, batches),
projector batches of any size, batches that crash before their commit, batches whose process
dies between the commit and the Redis write, and voids racing all of them, ends (once the
projector and the periodic heal have run) with Postgres and Redis holding exactly what the
plain-Python reference model holds for the matches still counting."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from anticheat.services import Actor, matches_void
from boards import selectors
from boards.receivers import mirror_accepted_scores
from boards.services import outbox_drain
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board, Match, PlayerValue
from scores.projection import batch_apply, pending_apply
from scores.selectors import cached_board
from scores.signals import score_accepted
from tests.conftest import game_with_boards, reset_results
from tests.factories import SeasonFactory
from tests.reference import RefBoard, Reference, RefSeason

BOARDS = [
    RefBoard("high", "desc", "best", 0, 3),
    RefBoard("low", "asc", "best", 10, 13),
    RefBoard("sum", "desc", "total", 0, 3),
]
SEASON = RefSeason("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC))
MOMENTS = ["2026-10-31T23:59:59+00:00", "2026-11-01T00:00:00+00:00", "2026-11-01T00:00:00.500+00:00",
           "2026-11-22T23:59:59+00:00", "2026-11-23T00:00:01+00:00"]  # fmt: skip
PLAYERS = ["a", "B"]  # few: results of one player meet in batches, voids and pending rows

# mostly within the board's bounds (a match with one result out of them is refused whole)
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
        "match_id": st.sampled_from([f"m{i}" for i in range(5)]),
        "ended_at": st.sampled_from(MOMENTS),
        "results": st.lists(result, min_size=1, max_size=3),
    }
)
# repeated entries weigh the draw: submissions, batches of the projector and voids meet often
operation = st.one_of(
    st.tuples(st.just("one"), match),
    st.tuples(st.just("one"), match),
    st.tuples(st.just("project"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("void"), st.integers(min_value=0, max_value=4)),
    st.tuples(st.just("batch"), st.lists(match, min_size=1, max_size=4)),
    st.tuples(st.just("retry"), st.integers(min_value=0, max_value=50)),
    st.tuples(st.just("project"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("crash"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("lost_redis"), st.integers(min_value=1, max_value=4)),
    st.tuples(st.just("void"), st.integers(min_value=0, max_value=20)),
)


def _one(match_id: str, board: str, score: int, player: str = "a") -> dict:
    return {
        "match_id": match_id,
        "ended_at": MOMENTS[0],
        "results": [{"player": player, "board": board, "score": score}],
    }


class Crash(Exception):
    """The projector's process dies before its batch commits."""


@pytest.fixture
def world(transactional_db, settings):
    settings.PROJECTOR_INLINE = False
    game, server = game_with_boards("prop", [(b, "unique") for b in BOARDS])
    SeasonFactory(game=game, slug=SEASON.slug, starts_at=SEASON.starts_at, ends_at=SEASON.ends_at)
    return game, server


def _without_redis_write(max_matches: int) -> None:
    """A batch whose process dies after its commit, before boards/ mirrors it to Redis."""
    score_accepted.disconnect(dispatch_uid="boards.mirror_accepted_scores")
    try:
        batch_apply(max_matches=max_matches)
    finally:
        score_accepted.connect(mirror_accepted_scores, dispatch_uid="boards.mirror_accepted_scores")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation, min_size=1, max_size=16))
# a void of an applied match while the same player's next result is still pending (a total:
# counting the pending one in the recompute and again when the projector applies it doubles it)
@example(ops=[("one", _one("m0", "sum", 3)), ("project", 4), ("one", _one("m1", "sum", 2)), ("void", 0)])
# a crash, then a batch that never reached Redis, then a void racing the rest
@example(
    ops=[
        ("batch", [_one("m0", "sum", 1), _one("m1", "high", 2)]),
        ("crash", 1),
        ("lost_redis", 1),
        ("one", _one("m2", "sum", 3)),
        ("void", 1),
        ("project", 1),
    ]
)
# a batch repeating a stored id twice, first with another body: the second is still a duplicate
@example(ops=[("one", _one("m0", "high", 0)), ("batch", [_one("m0", "high", 1), _one("m0", "high", 0)])])
def test_any_interleaving_with_crashes_and_voids_matches_the_reference(world, ops) -> None:
    game, server = world
    reset_results()
    answers = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])  # what each request must answer
    stored: list[dict] = []  # matches accepted, in order
    voided: set[str] = set()
    sent: list[dict] = []
    url = "/api/v1/games/prop/matches"

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
        elif kind == "void" and stored:  # one of the matches stored so far
            match_id = stored[arg % len(stored)]["match_id"]
            found = Match.objects.get(game=game, match_id=match_id)
            matches_void(game=game, match_pks=[found.pk], reason="property", actor=Actor("test"))
            voided.add(match_id)

    pending_apply()  # the projector catches up
    outbox_drain(grace_seconds=0)  # the periodic heal replays what never reached Redis
    ref = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])
    for m in stored:
        if m["match_id"] not in voided:
            ref.submit(m)
    values = {
        (pv.board.slug, pv.window, pv.player.external_id): pv.value
        for pv in PlayerValue.objects.select_related("board", "player")
    }
    assert values == {k: v.value for k, v in ref.values.items()}
    r = get_redis()
    for board in Board.objects.filter(game=game):
        windows = {w for b, w in ref.windows_with_values() if b == board.slug} | {"all"}
        for window in windows:
            want = ref.order(board.slug, window)
            got = selectors.board_range(cached_board("prop", board_slug=board.slug), window=window, start=0, stop=50)
            assert [e.external_id for e in got] == want, (board.slug, window)
            assert r.zcard(keys.board_key(board.id, window)) == len(want)
