"""A recurring tournament (docs/competitions.md) against tests/reference.py: a generated run of
results over a daily tournament, some outside its time and some beyond the day's attempts; each
result is refused or stored as the plain model of the rules says, each day's window is frozen
as its own period with the reference's order and values for that day alone, and the end freezes
the whole tournament with the reference's order of every counted result. Fixed dates: nothing
depends on today's."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from competitions.services import tournaments_close
from seasons.models import WindowFreeze
from seasons.selectors import standings_page
from seasons.services import windows_close
from tests.conftest import SignedClient
from tests.factories import GameFactory, server_key, tournament_board
from tests.projector import projected
from tests.reference import RefBoard, Reference

pytestmark = pytest.mark.usefixtures("real_projector")  # results reach the boards as users' do

STARTS = datetime(2026, 11, 20, tzinfo=UTC)
ENDS = datetime(2026, 11, 23, tzinfo=UTC)
MAX_ATTEMPTS = 2
DAYS = ["2026-11-20", "2026-11-21", "2026-11-22"]


def _frozen(window: str) -> list[tuple[str, int]]:
    freeze = WindowFreeze.objects.get(board__slug="cup", window=window)
    return [(s.player.external_id, s.value) for s in standings_page(freeze, offset=0, limit=1000)]


def test_each_day_of_a_recurring_tournament_is_frozen_as_its_own_period(transactional_db) -> None:
    game = GameFactory(slug="arena")
    tournament_board(
        game,
        starts_at=STARTS,
        ends_at=ENDS,
        windows=("all", "daily"),
        board={"max_score": 1000},
        max_attempts=MAX_ATTEMPTS,
    )
    key, secret = server_key(game)
    server = SignedClient(key.key_id, secret)
    ref = Reference(boards={"cup": RefBoard("cup", "desc", "best", 0, 1000)}, tz="UTC", seasons=[])

    rng = random.Random(27)
    used: Counter[tuple[str, str]] = Counter()  # the rules' plain model: counted results per player per day
    answers: Counter[tuple[int, str | None]] = Counter()
    for i in range(80):
        # a day before, the three days of the tournament, and the day after it
        at = STARTS + timedelta(days=rng.randint(-1, 3), seconds=rng.randint(0, 86_399))
        player = f"p{rng.randint(0, 6)}"
        match = {
            "match_id": f"m{i}",
            "ended_at": at.isoformat().replace("+00:00", "Z"),
            "results": [{"player": player, "board": "cup", "score": rng.randint(0, 1000)}],
        }
        day = at.date().isoformat()
        if not STARTS <= at < ENDS:
            expected = (400, "tournament_closed")
        elif used[(player, day)] >= MAX_ATTEMPTS:
            expected = (400, "no_attempts_left")
        else:
            used[(player, day)] += 1
            assert ref.submit(match) == 201
            expected = (201, None)
        r = server.post("/api/v1/games/arena/matches", match)
        got = (r.status_code, r.json()["error"]["code"] if r.status_code == 400 else None)
        assert got == expected, (match, r.content)
        answers[expected] += 1
    # the run exercised every branch
    assert set(answers) == {(201, None), (400, "tournament_closed"), (400, "no_attempts_left")}

    projected()
    # after the last day and the game's grace (300 s): each day frozen on its own
    report = windows_close(now=ENDS + timedelta(minutes=10))
    for day in DAYS:
        assert f"arena/cup daily:{day}" in report.frozen
        window = f"daily:{day}"
        expected = [(p, ref.values[("cup", window, p)].value) for p in ref.order("cup", window)]
        assert expected and _frozen(window) == expected
    assert not WindowFreeze.objects.filter(board__slug="cup", window="all").exists()  # the days close, not the cup

    # and the end freezes the whole tournament: every counted result, whatever its day
    assert tournaments_close(now=ENDS + timedelta(minutes=10)) == ["arena/cup"]
    expected = [(p, ref.values[("cup", "all", p)].value) for p in ref.order("cup", "all")]
    assert _frozen("all") == expected
