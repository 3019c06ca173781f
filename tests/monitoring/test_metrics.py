"""/metrics (docs/api.md §11): the Prometheus text format, read with prometheus-client's own
parser; its counters move when results arrive, with the outcome the API answered."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from monitoring.redis import CountingConnectionPool
from tests.conftest import SignedClient

URL = "/api/v1/games/chess"


def scrape(client: Client | None = None) -> dict[tuple[str, tuple], float]:
    response = (client or Client()).get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def matches(samples: dict, status: str) -> float:
    return value(samples, "leaderboard_matches_submitted_total", game="chess", status=status)


ENDED = "2026-11-28T12:00:00Z"


def _match(match_id: str, score: int = 10, board: str = "rating") -> dict:
    return {"match_id": match_id, "ended_at": ENDED, "results": [{"player": "p1", "board": board, "score": score}]}


def test_counters_move_with_each_outcome(server: SignedClient) -> None:
    before = scrape()
    assert server.post(f"{URL}/matches", _match("a1")).status_code == 201
    assert server.post(f"{URL}/matches", _match("a1")).status_code == 200  # the same again: duplicate
    assert server.post(f"{URL}/matches", _match("a1", score=11)).status_code == 409
    assert server.post(f"{URL}/matches", _match("bad", score=-1)).status_code == 400
    batch = {"matches": [_match("b1"), _match("b2"), _match("b1"), {"match_id": "broken"}]}
    assert server.post(f"{URL}/matches/batch", batch).status_code == 200
    after = scrape()
    assert matches(after, "accepted") - matches(before, "accepted") == 3
    assert matches(after, "duplicate") - matches(before, "duplicate") == 2
    assert matches(after, "conflict") - matches(before, "conflict") == 1
    assert matches(after, "rejected") - matches(before, "rejected") == 2
    route = "api/v1/games/<str:game>/matches"
    count = "leaderboard_http_request_duration_seconds_count"
    assert value(after, count, route=route, method="POST") - value(before, count, route=route, method="POST") == 4
    status = {"route": route, "method": "POST", "status": "201"}
    requests = "leaderboard_http_requests_total"
    assert value(after, requests, **status) - value(before, requests, **status) == 1


def test_unauthenticated_or_unknown_games_count_no_match(server: SignedClient) -> None:
    before = scrape()
    Client().post(f"{URL}/matches", _match("x"), content_type="application/json")  # 401
    server.post("/api/v1/games/nope/matches", _match("x"))  # 403: another game's key
    after = scrape()
    assert {k: v for k, v in after.items() if k[0] == "leaderboard_matches_submitted_total"} == {
        k: v for k, v in before.items() if k[0] == "leaderboard_matches_submitted_total"
    }
    unmatched = value(after, "leaderboard_http_requests_total", route="(unmatched)", method="GET", status="404")
    Client().get("/nothing/here")
    assert value(scrape(), "leaderboard_http_requests_total", route="(unmatched)", method="GET", status="404") == (
        unmatched + 1
    )


def test_the_ingest_lag_and_states_are_exported(server: SignedClient) -> None:
    from scores.models import BoardOutbox

    row = BoardOutbox.objects.create(entries=[])
    BoardOutbox.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(seconds=42))
    samples = scrape()
    assert 41 < value(samples, "leaderboard_ingest_lag_seconds") < 60
    assert value(samples, "leaderboard_ingest_pending") == 1
    assert value(samples, "leaderboard_component_up", component="worker") == 0
    row.delete()  # no match stands behind it: the projector's wait after the test would not end


def test_redis_errors_are_counted_on_a_real_refused_connection(transactional_db) -> None:
    """The pool as settings.CACHES builds it: the breaker's connection class, counted. The breaker's
    own refusals that follow (it opened on the failure) are not failures of Redis, and not counted."""
    from redis import Redis
    from redis.exceptions import ConnectionError as RedisConnectionError

    from rediskit.breaker import RedisUnavailable, breakers_reset, guarded_connection_class

    url = "redis://127.0.0.1:1/0"
    before = value(scrape(), "leaderboard_redis_errors_total", error="ConnectionError")
    pool = CountingConnectionPool.from_url(
        url, connection_class=guarded_connection_class(url), socket_connect_timeout=0.5
    )
    try:
        with pytest.raises(RedisConnectionError):
            Redis(connection_pool=pool, retry=None).ping()
        after_failure = value(scrape(), "leaderboard_redis_errors_total", error="ConnectionError")
        assert after_failure > before
        with pytest.raises(RedisUnavailable):
            Redis(connection_pool=pool, retry=None).ping()
        assert value(scrape(), "leaderboard_redis_errors_total", error="ConnectionError") == after_failure
    finally:
        breakers_reset()


def test_postgres_errors_are_counted(transactional_db) -> None:
    before = value(scrape(), "leaderboard_postgres_errors_total", error="ProgrammingError")
    with pytest.raises(DatabaseError), connection.cursor() as cur:
        cur.execute("SELECT * FROM no_such_table")
    assert value(scrape(), "leaderboard_postgres_errors_total", error="ProgrammingError") == before + 1
