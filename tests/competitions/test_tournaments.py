"""Tournaments (docs/api.md §12.1, docs/competitions.md) against real Postgres: joins and attempts
counted exactly under concurrency, results outside the tournament refused per result."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from competitions.models import TournamentAttempt, TournamentEntry, TournamentSize
from scores.config import ConfigError, parse_game_config
from scores.models import Result
from scores.services import game_config_apply, player_token_issue
from tests.conftest import SignedClient
from tests.factories import BoardFactory, GameFactory, PlayerFactory, server_key, tournament_board, tournament_settings

pytestmark = pytest.mark.usefixtures("real_projector")  # results reach the boards as users' do

THREADS = 8


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture
def now() -> datetime:
    return timezone.now().replace(microsecond=0)


def _tournament_game(now: datetime, *, windows=("all",), **settings):
    """A game with a plain board and a tournament running from a day ago to a day ahead."""
    game = GameFactory(slug="arena")
    BoardFactory(game=game, slug="rating", windows=["all"])
    tournament_board(
        game, starts_at=now - timedelta(days=1), ends_at=now + timedelta(days=1), windows=tuple(windows), **settings
    )
    key, secret = server_key(game)
    return game, SignedClient(key.key_id, secret)


def _match(match_id: str, ended_at: datetime, *results: tuple[str, str, int]) -> dict:
    return {
        "match_id": match_id,
        "ended_at": _iso(ended_at),
        "results": [{"player": p, "board": b, "score": s} for p, b, s in results],
    }


def _run_threads(server: SignedClient, jobs: list, call) -> list:
    def run(job):
        client = SignedClient(server.key_id, server.secret)
        try:
            return call(client, job)
        finally:
            connection.close()

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(run, jobs))


# --- configuration ----------------------------------------------------------------------------

_TOML = """
[game]
slug = "arena"
name = "Arena"

[[boards]]
slug = "cup"
name = "The Cup"
max_score = 1000
windows = WINDOWS

[boards.tournament]
starts_at = 2026-12-01T00:00:00Z
ends_at = "2026-12-08T00:00:00+00:00"
join_required = true
max_size = 64
max_attempts = 3
"""


def test_a_tournament_table_is_applied_and_read_back(transactional_db) -> None:
    spec = parse_game_config(_TOML.replace("WINDOWS", '["all", "daily"]'))
    assert game_config_apply(spec) == ["created game arena", "created board cup"]
    assert game_config_apply(spec) == []  # applying twice changes nothing
    r = Client().get("/api/v1/games/arena/tournaments")
    assert r.status_code == 200
    assert r.json()["tournaments"][0] | {"state": None} == {
        "slug": "cup",
        "name": "The Cup",
        "state": None,
        "starts_at": "2026-12-01T00:00:00Z",
        "ends_at": "2026-12-08T00:00:00Z",
        "size": 0,
        "max_size": 64,
        "join_required": True,
        "max_attempts": 3,
    }


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda t: t.replace("WINDOWS", '["all", "monthly"]'), "boards[0].windows"),
        (
            lambda t: t.replace("WINDOWS", '["all"]').replace("max_size = 64", "max_size = -1"),
            "boards[0].tournament.max_size",
        ),
        (
            lambda t: t.replace("WINDOWS", '["all"]').replace("max_size = 64", "colour = 1"),
            "boards[0].tournament.colour",
        ),
        (
            lambda t: t.replace("WINDOWS", '["all"]').replace("2026-12-08T00:00:00+00:00", "2026-11-01T00:00:00Z"),
            "boards[0].tournament.ends_at",
        ),
        (
            lambda t: t.replace("WINDOWS", '["all"]').replace("join_required = true", 'join_required = "y"'),
            "boards[0].tournament.join_required",
        ),
    ],
)
def test_a_bad_tournament_table_is_refused_naming_the_key(edit, key) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_game_config(edit(_TOML))
    assert exc.value.key == key


# --- the list ---------------------------------------------------------------------------------


def test_the_list_by_state(transactional_db, now) -> None:
    game = GameFactory(slug="arena")
    for slug, start, end in [("past", -3, -2), ("live", -1, 1), ("soon", 2, 3)]:
        tournament_board(
            game, slug=slug, starts_at=now + timedelta(days=start), ends_at=now + timedelta(days=end), max_size=10
        )
    BoardFactory(game=game, slug="rating")  # not a tournament: never listed
    listed = {
        state: [t["slug"] for t in Client().get(f"/api/v1/games/arena/tournaments?state={state}").json()["tournaments"]]
        for state in ("active", "upcoming", "ended")
    }
    assert listed == {"active": ["live"], "upcoming": ["soon"], "ended": ["past"]}
    assert [t["slug"] for t in Client().get("/api/v1/games/arena/tournaments").json()["tournaments"]] == [
        "past",
        "live",
        "soon",
    ]
    bad = Client().get("/api/v1/games/arena/tournaments?state=later")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_query"
    assert Client().get("/api/v1/games/nope/tournaments").status_code == 404


# --- joins ------------------------------------------------------------------------------------


def test_join_twice_is_harmless_and_a_player_token_joins_itself(transactional_db, now) -> None:
    game, server = _tournament_game(now, join_required=True)
    path = "/api/v1/games/arena/tournaments/cup/players/ana/join"
    assert server.post(path).json() == {"joined": True, "size": 1}
    assert server.post(path).json() == {"joined": True, "size": 1}
    bo = PlayerFactory(game=game, external_id="bo")
    token, _ = player_token_issue(player=bo)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    mine = Client().post("/api/v1/games/arena/tournaments/cup/players/bo/join", **auth)
    assert mine.status_code == 200 and mine.json() == {"joined": True, "size": 2}
    theirs = Client().post("/api/v1/games/arena/tournaments/cup/players/cy/join", **auth)
    assert theirs.status_code == 403
    assert Client().post("/api/v1/games/arena/tournaments/cup/players/cy/join").status_code == 401
    assert server.post("/api/v1/games/arena/tournaments/rating/players/ana/join").status_code == 404
    assert TournamentEntry.objects.count() == 2


def test_an_ended_tournament_refuses_joins(transactional_db, now) -> None:
    game, server = _tournament_game(now)
    from scores.models import Board

    Board.objects.filter(slug="cup").update(
        tournament=tournament_settings(now - timedelta(days=2), now - timedelta(days=1), join_required=True)
    )
    r = server.post("/api/v1/games/arena/tournaments/cup/players/ana/join")
    assert r.status_code == 409 and r.json()["error"]["code"] == "tournament_ended"
    assert TournamentEntry.objects.count() == 0


def test_a_join_race_at_max_size_admits_exactly_max_size(transactional_db, now) -> None:
    _, server = _tournament_game(now, join_required=True, max_size=5)
    players = [f"p{i}" for i in range(24)]
    answers = _run_threads(
        server,
        players,
        lambda c, p: c.post(f"/api/v1/games/arena/tournaments/cup/players/{p}/join"),
    )
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * 5 + [409] * 19
    assert {a.json()["error"]["code"] for a in answers if a.status_code == 409} == {"tournament_full"}
    assert sorted(a.json()["size"] for a in answers if a.status_code == 200) == [1, 2, 3, 4, 5]
    assert TournamentEntry.objects.count() == 5
    assert TournamentSize.objects.get().size == 5


# --- results ----------------------------------------------------------------------------------


def test_attempts_under_concurrent_submissions_count_exactly(transactional_db, now) -> None:
    _, server = _tournament_game(now, max_attempts=3)
    bodies = [_match(f"m{i}", now - timedelta(minutes=1), ("ana", "cup", i), ("bo", "rating", i)) for i in range(24)]
    answers = _run_threads(server, bodies, lambda c, b: c.post("/api/v1/games/arena/matches", b))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [201] * 3 + [400] * 21
    assert {a.json()["error"]["code"] for a in answers if a.status_code == 400} == {"no_attempts_left"}
    assert Result.objects.filter(board__slug="cup").count() == 3
    # the match's other results still count
    assert Result.objects.filter(board__slug="rating").count() == 24
    assert TournamentAttempt.objects.get().used == 3


def test_attempts_under_concurrent_batches_count_exactly(transactional_db, now) -> None:
    _, server = _tournament_game(now, max_attempts=5)
    batches = [
        {"matches": [_match(f"b{t}-{i}", now - timedelta(minutes=1), ("ana", "cup", i)) for i in range(4)]}
        for t in range(THREADS)
    ]
    answers = _run_threads(server, batches, lambda c, b: c.post("/api/v1/games/arena/matches/batch", b))
    results = [r for a in answers for r in a.json()["results"]]
    assert sorted(r["status"] for r in results) == ["accepted"] * 5 + ["rejected"] * 27
    assert {r["error"]["code"] for r in results if r["status"] == "rejected"} == {"no_attempts_left"}
    assert Result.objects.filter(board__slug="cup").count() == 5
    # a fully refused match is not stored: once attempts exist again it may be sent anew
    assert Result.objects.values("match_id").distinct().count() == 5


def test_a_retry_counts_no_second_attempt(transactional_db, now) -> None:
    _, server = _tournament_game(now, max_attempts=2)
    body = _match("once", now - timedelta(minutes=1), ("ana", "cup", 7))
    assert server.post("/api/v1/games/arena/matches", body).status_code == 201
    again = server.post("/api/v1/games/arena/matches", body)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert TournamentAttempt.objects.get().used == 1


def test_results_outside_the_window_are_refused_single_and_batch(transactional_db, now) -> None:
    _, server = _tournament_game(now)
    early = now - timedelta(days=2)
    single = server.post("/api/v1/games/arena/matches", _match("early", early, ("ana", "cup", 5)))
    assert single.status_code == 400 and single.json()["error"]["code"] == "tournament_closed"
    assert Result.objects.count() == 0  # nothing of it is stored
    mixed = server.post("/api/v1/games/arena/matches", _match("mixed", early, ("ana", "cup", 5), ("ana", "rating", 9)))
    assert mixed.status_code == 400 and mixed.json()["error"]["code"] == "tournament_closed"
    assert list(Result.objects.values_list("board__slug", "score")) == [("rating", 9)]  # the other result counts
    batch = server.post(
        "/api/v1/games/arena/matches/batch",
        {
            "matches": [
                _match("b-early", early, ("bo", "cup", 1)),
                _match("b-inside", now - timedelta(minutes=1), ("bo", "cup", 2)),
                _match("b-mixed", early, ("cy", "cup", 3), ("cy", "rating", 4)),
            ]
        },
    )
    assert batch.status_code == 200
    got = [(r["match_id"], r["status"], (r.get("error") or {}).get("code")) for r in batch.json()["results"]]
    assert got == [
        ("b-early", "rejected", "tournament_closed"),
        ("b-inside", "accepted", None),
        ("b-mixed", "rejected", "tournament_closed"),
    ]
    assert sorted(Result.objects.values_list("player__external_id", "board__slug", "score")) == [
        ("ana", "rating", 9),
        ("bo", "cup", 2),
        ("cy", "rating", 4),
    ]


def test_results_of_players_who_have_not_joined_are_refused(transactional_db, now) -> None:
    _, server = _tournament_game(now, join_required=True)
    ended = now - timedelta(minutes=1)
    r = server.post("/api/v1/games/arena/matches", _match("m1", ended, ("ana", "cup", 5)))
    assert r.status_code == 400 and r.json()["error"]["code"] == "not_in_tournament"
    assert server.post("/api/v1/games/arena/tournaments/cup/players/ana/join").status_code == 200
    assert server.post("/api/v1/games/arena/matches", _match("m1", ended, ("ana", "cup", 5))).status_code == 201
    assert Result.objects.filter(board__slug="cup").count() == 1


def test_a_recurring_tournament_counts_attempts_per_day(transactional_db, now) -> None:
    _, server = _tournament_game(now, windows=("all", "daily"), max_attempts=1)
    yesterday, today = now - timedelta(days=1) + timedelta(minutes=1), now - timedelta(minutes=1)
    if yesterday.date() == today.date():  # the tournament started just after a midnight
        yesterday = today.replace(hour=0, minute=0, second=0) - timedelta(minutes=1)
        if yesterday < now - timedelta(days=1):
            pytest.skip("no two days inside the tournament")  # cannot happen with a 2-day span
    codes = [
        server.post("/api/v1/games/arena/matches", _match(mid, at, ("ana", "cup", 1))).status_code
        for mid, at in [("d1", yesterday), ("d1b", yesterday), ("d2", today), ("d2b", today)]
    ]
    assert codes == [201, 400, 201, 400]
    assert sorted(TournamentAttempt.objects.values_list("used", flat=True)) == [1, 1]
