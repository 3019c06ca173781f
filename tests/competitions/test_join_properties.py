"""Join races against tests/reference.py (docs/competitions.md, "Counting exactly under
concurrency"): rounds of concurrent joins, some of one player more than once, at any
`max_size`, to a running or an ended tournament. Each round's answers must be exactly the
answers RefTournament gives when the round's joins are applied one at a time in some order, the
order being read back from the answers themselves (each admission's `size` is its place in line);
at `max_size` exactly `max_size` players are in, and the stored entries are the model's. Fixed
dates far from today's: a running tournament ends in 2999, an ended one ended in 2000."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from competitions.models import TournamentEntry, TournamentSize
from scores.models import Board
from scores.selectors import config_cache_clear
from tests.competitions.test_tournaments import _run_threads
from tests.conftest import SignedClient, reset_results
from tests.factories import GameFactory, server_key, tournament_board, tournament_settings
from tests.properties import examples
from tests.reference import RefTournament

# Property tests of what ingest decides in the request (docs/competitions.md): many examples in one
# test's database (reset_results restarts its ids), nothing read from the boards.
STARTS = datetime(2000, 1, 1, tzinfo=UTC)
RUNNING_UNTIL = datetime(2999, 1, 1, tzinfo=UTC)
ENDED_AT = datetime(2000, 1, 2, tzinfo=UTC)
PLAYERS = [f"p{i}" for i in range(10)]

Answer = tuple[int, dict]


@pytest.fixture
def cup(transactional_db) -> SignedClient:
    game = GameFactory(slug="arena")
    tournament_board(game, starts_at=STARTS, ends_at=RUNNING_UNTIL, join_required=True)
    key, secret = server_key(game)
    return SignedClient(key.key_id, secret)


def _answer(response) -> Answer:
    body = response.json()
    return response.status_code, body if response.status_code == 200 else {"code": body["error"]["code"]}


def serial_order(
    players: list[str], answers: list[Answer], *, max_size: int, already: frozenset[str] = frozenset()
) -> list[int]:
    """The order in which the round's joins took effect, as their answers tell it: an admission
    answered `size` N came N-th; a player's repeat join (answered the size it saw) after their
    admission and after the admission that made that size; a refusal after every admission.
    Players in `already` (admitted in an earlier round) only repeat. Any order the answers allow
    works: the model must then answer each join as the service did."""
    first: dict[str, int] = {}  # a player's join that admitted them: their smallest size answered
    for i, (player, (status, body)) in enumerate(zip(players, answers, strict=True)):
        if player in already:
            continue
        if status == 200 and (player not in first or body["size"] < answers[first[player]][1]["size"]):
            first[player] = i

    def key(i: int) -> tuple[int, int, int]:
        status, body = answers[i]
        if status != 200:
            return (max_size or len(players) + 1_000_000, 2, i)  # refused: after every admission
        return (body["size"], 0 if first.get(players[i]) == i else 1, i)

    return sorted(range(len(players)), key=key)


@settings(
    max_examples=examples(loop=10, deep=20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    max_size=st.integers(0, 6),
    ended=st.sampled_from([False, False, False, True]),  # mostly running: that is where races count
    rounds=st.lists(st.lists(st.sampled_from(PLAYERS), min_size=1, max_size=14), min_size=1, max_size=3),
)
def test_concurrent_joins_answer_as_the_reference_does(
    cup: SignedClient, max_size: int, ended: bool, rounds: list[list[str]]
) -> None:
    reset_results()
    TournamentSize.objects.all().delete()
    Board.objects.filter(slug="cup").update(
        tournament=tournament_settings(
            STARTS, ENDED_AT if ended else RUNNING_UNTIL, join_required=True, max_size=max_size
        )
    )
    config_cache_clear()
    ref = RefTournament(max_size=max_size, ended=ended)

    for joins in rounds:
        answers = [
            _answer(r)
            for r in _run_threads(
                cup, joins, lambda c, p: c.post(f"/api/v1/games/arena/tournaments/cup/players/{p}/join")
            )
        ]
        order = serial_order(joins, answers, max_size=max_size, already=frozenset(ref.joined))
        expected = {i: ref.join(joins[i]) for i in order}
        assert answers == [expected[i] for i in range(len(joins))], (joins, answers)

    joined = set(TournamentEntry.objects.values_list("player__external_id", flat=True))
    assert joined == set(ref.joined)
    size = TournamentSize.objects.filter(board__slug="cup").values_list("size", flat=True).first() or 0
    assert size == len(ref.joined)
    distinct = len({p for joins in rounds for p in joins})
    if not ended and max_size and distinct >= max_size:
        assert size == max_size  # a race at max_size admits exactly max_size


def test_serial_order_can_fail() -> None:
    """Answers no one-at-a-time order explains are caught: two admissions told the same size,
    and a refusal as full while a place was left."""
    ref = RefTournament(max_size=2)
    twice = [(200, {"joined": True, "size": 1}), (200, {"joined": True, "size": 1})]
    order = serial_order(["a", "b"], twice, max_size=2)
    assert [ref.join(["a", "b"][i]) for i in order] != twice
    ref = RefTournament(max_size=2)
    early = [(200, {"joined": True, "size": 1}), (409, {"code": "tournament_full"})]
    order = serial_order(["a", "b"], early, max_size=2)
    assert [ref.join(["a", "b"][i]) for i in order] != early
