"""Group commit (scores/ingest/gather.py): single submissions sent at once to one process are
stored by one statement, and each caller gets the answer it would get alone, against the
reference model (tests/reference.py): duplicates and conflicts across one group, a refused
match beside accepted ones."""

from __future__ import annotations

import threading

from django.db import connections
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scores.models import Match
from tests.conftest import SignedClient, game_with_boards, reset_results
from tests.reference import RefBoard, Reference

BOARDS = [RefBoard("high", "desc", "best", 0, 3), RefBoard("sum", "desc", "total", 0, 3)]
URL = "/api/v1/games/gather/matches"

result = st.sampled_from(BOARDS).flatmap(
    lambda b: st.fixed_dictionaries(
        {
            "player": st.sampled_from(["a", "B", "c"]),
            "board": st.just(b.slug),
            "score": st.one_of(*[st.integers(min_value=b.min_score, max_value=b.max_score)] * 5, st.just(9)),
        }
    )
)
match = st.fixed_dictionaries(
    {
        "match_id": st.sampled_from(["m1", "m2", "m3"]),
        "ended_at": st.just("2026-11-20T10:00:00+00:00"),
        "results": st.lists(result, min_size=1, max_size=2),
    }
)


def _send_together(key_id: str, secret: str, bodies: list[dict]) -> list[tuple[int, dict]]:
    answers: list[tuple[int, dict] | None] = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def send(i: int) -> None:
        try:
            client = SignedClient(key_id, secret, Client())
            start.wait()
            response = client.post(URL, bodies[i])
            answers[i] = (response.status_code, response.json())
        finally:
            connections.close_all()  # this thread's own database connection

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers  # type: ignore[return-value]


@given(bodies=st.lists(match, min_size=2, max_size=6))
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_gathered_group_answers_each_caller_as_alone(transactional_db, settings, bodies: list[dict]) -> None:
    settings.PROJECTOR_INLINE = False  # the request alone
    settings.INGEST_GATHER_MS = 500  # long enough for every thread to arrive: the group is full first
    settings.INGEST_GATHER_MAX = len(bodies)
    reset_results()
    from scores.models import Game

    Game.objects.filter(slug="gather").delete()
    _, server = game_with_boards("gather", [(b, "dense") for b in BOARDS])
    answers = _send_together(server.key_id, server.secret, bodies)

    # Alone, one after another: the first stored copy of each match_id first (which copy wins a
    # race is not specified), then the others in any order.
    winners = [i for i, (code, _) in enumerate(answers) if code == 201]
    order = winners + [i for i in range(len(bodies)) if i not in winners]
    reference = Reference({b.slug: b for b in BOARDS}, "UTC", [])
    expected = {i: reference.submit(bodies[i]) for i in order}
    assert [code for code, _ in answers] == [expected[i] for i in range(len(bodies))], (bodies, answers)
    for (code, body), sent in zip(answers, bodies, strict=True):
        if code in (200, 201):
            assert body["match_id"] == sent["match_id"] and body["duplicate"] == (code == 200)
        else:
            assert body["error"]["code"] in {"score_out_of_bounds", "match_conflict"}
    stored = Match.objects.filter(game__slug="gather")
    assert sorted(stored.values_list("match_id", flat=True)) == sorted({bodies[i]["match_id"] for i in winners})
    stored_bodies = {m.match_id: m.body_hash for m in stored}
    assert len(stored_bodies) == len(winners)
    # one statement stored the group: one stamp for every match it stored
    assert stored.values("received_at").distinct().count() <= 1
