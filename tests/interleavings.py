"""The driver of the interleaving property tests (tests/scores/test_*_properties.py): a list of
operations drawn by hypothesis (submissions single and batched, retries of what was sent,
projector batches, a batch that crashes before its commit, one whose process dies between the
commit and the Redis write, voids from the admin, full rebuilds) run against the service, each
answer checked against the plain-Python reference model (tests/reference.py) as it comes, then
the projector and the periodic heal run. What the service holds at the end is each test's own
subject: `Interleaving.run` returns the reference for the matches still counting, and
`assert_boards_match` compares every board's order with it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import transaction
from hypothesis import strategies as st

from anticheat.services import Actor, matches_void
from boards import index, selectors
from boards.receivers import mirror_accepted_scores
from boards.services import boards_rebuild, outbox_drain
from scores.models import Board, Game, Match
from scores.projection import batch_apply, pending_apply
from scores.selectors import cached_board
from scores.signals import score_accepted
from tests.conftest import game_with_boards, reset_results, set_keys
from tests.factories import SeasonFactory
from tests.reference import RefBoard, Reference, RefSeason

SEASON = RefSeason("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC))


def matches(result: st.SearchStrategy[dict], match_ids: Sequence[str], moments: Sequence[str]) -> st.SearchStrategy:
    """A match of one to three results; few ids and moments, so duplicates, conflicts and ties meet."""
    return st.fixed_dictionaries(
        {
            "match_id": st.sampled_from(match_ids),
            "ended_at": st.sampled_from(moments),
            "results": st.lists(result, min_size=1, max_size=3),
        }
    )


def operations(match: st.SearchStrategy, *, lost_redis: bool = True, rebuild: bool = True) -> st.SearchStrategy:
    """One step of an interleaving. Repeated entries weigh the draw: submissions, projector
    batches and voids meet often. `lost_redis`: batches whose Redis write never happens;
    `rebuild`: full rebuilds of the index from Postgres."""
    steps = [
        st.tuples(st.just("one"), match),
        st.tuples(st.just("one"), match),
        st.tuples(st.just("batch"), st.lists(match, min_size=1, max_size=4)),
        st.tuples(st.just("retry"), st.integers(min_value=0, max_value=50)),
        st.tuples(st.just("project"), st.integers(min_value=1, max_value=4)),
        st.tuples(st.just("project"), st.integers(min_value=1, max_value=4)),
        st.tuples(st.just("crash"), st.integers(min_value=1, max_value=4)),
        st.tuples(st.just("void"), st.integers(min_value=0, max_value=20)),
        st.tuples(st.just("void"), st.integers(min_value=0, max_value=20)),
    ]
    if lost_redis:
        steps.append(st.tuples(st.just("lost_redis"), st.integers(min_value=1, max_value=4)))
    if rebuild:
        steps.append(st.tuples(st.just("rebuild"), st.just(0)))
    return st.one_of(*steps)


class Crash(Exception):
    """The projector's process dies before its batch commits."""


def without_redis_write(max_matches: int) -> None:
    """A batch whose process dies after its commit, before boards/ mirrors it to Redis."""
    score_accepted.disconnect(dispatch_uid="boards.mirror_accepted_scores")
    try:
        batch_apply(max_matches=max_matches)
    finally:
        score_accepted.connect(mirror_accepted_scores, dispatch_uid="boards.mirror_accepted_scores")


class Interleaving:
    """A game with `boards` (and SEASON) whose submissions go through the API with a signing
    server, and the projector driven batch by batch (no projector process runs beside the test:
    the test is the projector's schedule). `refused(match, body)`: more checks of a 400's body."""

    def __init__(
        self, slug: str, boards: Sequence[RefBoard], refused: Callable[[dict, dict], None] | None = None
    ) -> None:
        self.slug = slug
        self.boards = {b.slug: b for b in boards}
        self.game, self.server = game_with_boards(slug, [(b, "unique") for b in boards])
        SeasonFactory(game=self.game, slug=SEASON.slug, starts_at=SEASON.starts_at, ends_at=SEASON.ends_at)
        self.refused = refused

    def reference(self) -> Reference:
        return Reference(self.boards, "UTC", [SEASON])

    def run(self, ops: list[tuple[str, Any]]) -> Reference:
        """Run `ops` from empty tables, every answer as the reference gives it; then the projector
        catches up and the periodic heal replays what never reached Redis. Returns the reference
        fed the matches stored and not voided, in the order they were stored."""
        reset_results()
        answers = self.reference()  # what each request must answer
        stored: list[dict] = []  # matches accepted, in order
        voided: set[str] = set()
        sent: list[dict] = []
        url = f"/api/v1/games/{self.slug}/matches"

        def expect(m: dict) -> tuple[int, str]:
            code = answers.submit(m)
            if code == 201:
                stored.append(m)
            return code, "voided" if code == 200 and m["match_id"] in voided else "accepted"

        for kind, arg in ops:
            if kind == "retry":
                if not sent:
                    continue
                kind, arg = "one", sent[arg % len(sent)]
            if kind == "one":
                sent.append(arg)
                code, status = expect(arg)
                response = self.server.post(url, arg)
                assert response.status_code == code, (arg, response.json())
                if code < 400:
                    assert response.json()["status"] == status
                elif code == 400 and self.refused is not None:
                    self.refused(arg, response.json())
            elif kind == "batch":
                sent.extend(arg)
                want = []
                for m in arg:
                    code, status = expect(m)
                    want.append((status, code == 200) if code < 400 else ("rejected", False))
                got = self.server.post(url + "/batch", {"matches": arg}).json()["results"]
                assert [(r["status"], r["duplicate"]) for r in got] == want, (arg, got)
            elif kind == "project":
                batch_apply(max_matches=arg)
            elif kind == "crash":
                with pytest.raises(Crash), transaction.atomic():
                    batch_apply(max_matches=arg)
                    raise Crash
            elif kind == "lost_redis":
                without_redis_write(arg)
            elif kind == "void" and stored:  # one of the matches stored so far
                match_id = stored[arg % len(stored)]["match_id"]
                found = Match.objects.get(game=self.game, match_id=match_id)
                matches_void(game=self.game, match_pks=[found.pk], reason="property", actor=Actor("test"))
                voided.add(match_id)
            elif kind == "rebuild":
                boards_rebuild()

        pending_apply()  # the projector catches up
        outbox_drain(grace_seconds=0)  # the periodic heal replays what never reached Redis
        ref = self.reference()
        for m in stored:
            if m["match_id"] not in voided:
                ref.submit(m)
        return ref


def assert_boards_match(game: Game, ref: Reference) -> None:
    """Every board window of `game` with a value (and `all`) reads in the reference's order,
    with its values, and its sorted sets hold exactly those players."""
    for board in Board.objects.filter(game=game):
        config = cached_board(game.slug, board_slug=board.slug)
        windows = {w for b, w in ref.windows_with_values() if b == board.slug} | {"all"}
        for window in windows:
            want = ref.order(board.slug, window)
            got = selectors.board_range(config, window=window, start=0, stop=50)
            assert [e.external_id for e in got] == want, (board.slug, window)
            assert [e.value for e in got] == [ref.values[(board.slug, window, p)].value for p in want]
            assert sum(index.index().zcard(k) for k in set_keys(board.id, window)) == len(want)
