"""A new player created by two requests at once (real Postgres transactions): the append
statement cannot see a player another request committed after its snapshot (PlayerRace); the
retry inserts the players first, which cannot race, so the submission never answers 500."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

import psycopg
from django.db import connection, transaction

from scores.ingest.append import PlayerRace, append
from scores.ingest.matches import MatchIn, ResultIn
from scores.models import Result
from scores.selectors import cached_game_config
from tests.polling import until


def _dsn() -> str:
    db = connection.settings_dict  # the test database
    return psycopg.conninfo.make_conninfo(
        host=db["HOST"], port=db["PORT"], dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"] or None
    )


def _someone_waits_on_a_lock() -> bool:
    with psycopg.connect(_dsn(), autocommit=True) as watcher:
        (n,) = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return n > 0


def _while_another_request_creates_racer(game, ours: Callable[[], object]) -> tuple[object, int]:
    """Another transaction inserts player "racer" and holds its commit; ours() runs in a thread
    (it waits on that insert), then the other commits. Returns what ours() returned or raised,
    and the other's player pk."""
    other = psycopg.connect(_dsn())
    (racer_pk,) = other.execute(
        "INSERT INTO scores_player (game_id, external_id, display_name, created_at) "
        "VALUES (%s, 'racer', '', now()) RETURNING id",
        [game.id],
    ).fetchone()
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(ours())
        except BaseException as exc:  # noqa: BLE001  (handed to the test thread)
            outcome.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        until(_someone_waits_on_a_lock, "ours waiting on the other insert", every=0.01)
    finally:
        other.commit()
        other.close()
    thread.join(timeout=30)
    assert not thread.is_alive()
    return outcome[0], racer_pk


def _append(game, *, players_first: bool) -> tuple[object, int]:
    config = cached_game_config(game.slug)
    match = MatchIn("race-1", datetime(2026, 11, 28, 12, tzinfo=UTC), (ResultIn("racer", "rating", 42),))

    def ours() -> None:
        with transaction.atomic():
            append(config, None, [(0, match, match.body_hash())], set(), players_first=players_first)

    return _while_another_request_creates_racer(game, ours)


def test_the_one_statement_append_cannot_see_a_player_committed_meanwhile(game) -> None:
    raised, _ = _append(game, players_first=False)
    assert isinstance(raised, PlayerRace)


def test_players_first_finds_the_player_the_other_request_created(game) -> None:
    raised, racer_pk = _append(game, players_first=True)
    assert raised is None
    assert list(Result.objects.filter(match__match_id="race-1").values_list("player_id", "score")) == [(racer_pk, 42)]


def test_a_submission_that_races_answers_201(game, server) -> None:
    """The whole request: the race, then the retry, then 201 (not 500)."""
    body = {
        "match_id": "race-2",
        "ended_at": "2026-11-28T12:00:00Z",
        "results": [{"player": "racer", "board": "rating", "score": 7}],
    }
    status, racer_pk = _while_another_request_creates_racer(
        game, lambda: server.post("/api/v1/games/chess/matches", body).status_code
    )
    assert status == 201
    assert list(Result.objects.filter(match__match_id="race-2").values_list("player_id", "score")) == [(racer_pk, 7)]
