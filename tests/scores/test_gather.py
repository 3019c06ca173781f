"""Group commit for single submissions (scores/ingest/gather.py, docs/architecture.md "Group commit
for single submissions"): concurrent single submissions, handed by the request threads to the
append service and stored in shared groups, get each the answer it would get alone, and the
boards the real projector builds from them are the reference model's (tests/reference.py)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boards import selectors
from scores.ingest import gather
from scores.ingest.gather import AppendService, _match_decode, _match_encode
from scores.ingest.matches import MatchIn, ResultIn
from scores.models import Match, PlayerValue, Result
from scores.selectors import cached_board
from tests.conftest import SignedClient, game_with_boards, reset_results
from tests.factories import SeasonFactory
from tests.projector import projected
from tests.properties import examples
from tests.reference import RefBoard, Reference, RefSeason

URL = "/api/v1/games/gath/matches"
BOARDS = [
    RefBoard("high", "desc", "best", 0, 3),
    RefBoard("low", "asc", "best", 10, 13),
    RefBoard("sum", "desc", "total", 0, 3),
]
SEASON = RefSeason("s1", datetime(2026, 11, 1, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC))
MOMENTS = ["2026-11-22T23:59:59+00:00", "2026-11-22T23:59:59.700000+00:00", "2026-11-23T00:00:00.500000+00:00"]
PLAYERS = ["a", "b", "B", "a1"]
SAFETY_GATHER_MS = 20_000  # a group closes when the whole wave arrived; this only ends a hung test

result = st.fixed_dictionaries(
    {
        "player": st.sampled_from(PLAYERS),
        # "nope" and the scores outside a board's bounds: 400, stored nowhere, beside the others
        "board": st.sampled_from([b.slug for b in BOARDS] + ["nope"]),
        "score": st.integers(min_value=-1, max_value=14),
    }
)
match = st.fixed_dictionaries(
    {
        "match_id": st.sampled_from([f"m{i}" for i in range(5)]),
        "ended_at": st.sampled_from(MOMENTS),
        "results": st.lists(result, min_size=1, max_size=3),
    }
)
# what one caller sends: a match, or a copy of one sent before (in this wave or an earlier one)
submission = st.one_of(match, match, st.integers(min_value=0, max_value=40))
waves = st.lists(st.lists(submission, min_size=1, max_size=7), min_size=1, max_size=3)


class ServiceThread:
    """The append service of `make run`, in a thread of the test process (its own database
    connection), on a socket of its own; the request threads hand it their matches."""

    def __init__(self, path: Path) -> None:
        self.service = AppendService(path, gather_ms=SAFETY_GATHER_MS, gather_max=1)
        self.service.listen()
        self.thread = threading.Thread(target=self._run, name="append-service", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.service.serve()
        finally:
            connection.close()

    def stop(self) -> None:
        self.service.stop()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


@pytest.fixture
def service(settings) -> Iterator[ServiceThread]:
    path = Path(tempfile.mkdtemp(prefix="lb-gather-")) / "append.sock"  # short: a unix socket's path is limited
    settings.WEB_APPEND_SERVICE = True
    settings.WEB_APPEND_SOCKET = str(path)
    running = ServiceThread(path)
    yield running
    running.stop()
    path.parent.rmdir()


@pytest.fixture
def world(transactional_db, real_projector):
    game, server = game_with_boards("gath", [(b, "unique") for b in BOARDS])
    SeasonFactory(game=game, slug=SEASON.slug, starts_at=SEASON.starts_at, ends_at=SEASON.ends_at)
    return game, server


def _post_concurrently(server: SignedClient, bodies: list[dict[str, Any]]) -> list[Any]:
    """Each body from its own thread (its own kept connection to the service), all at once."""
    answers: list[Any] = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def send(i: int) -> None:
        client = SignedClient(server.key_id, server.secret)
        try:
            start.wait(timeout=30)
            answers[i] = client.post(URL, bodies[i])
        finally:
            gather._disconnect()
            connection.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return answers


def _refusal(body: dict[str, Any]) -> str:
    """The error code of an invalid match (docs/api.md §4): its first result the boards refuse."""
    boards = {b.slug: b for b in BOARDS}
    for r in body["results"]:
        board = boards.get(r["board"])
        if board is None:
            return "unknown_board"
        if not board.min_score <= r["score"] <= board.max_score:
            return "score_out_of_bounds"
    raise AssertionError(f"{body} is valid")


def _expected_wave(ref: Reference, bodies: list[dict[str, Any]], statuses: list[int]) -> list[int]:
    """What the reference answers when the wave's submissions come one by one, in an order the
    answers allow: for a match_id new to the reference, the valid submission answered 201 first
    (there must be exactly one such), then its other submissions."""
    order = list(range(len(bodies)))
    first_of: dict[str, int] = {}
    for i, body in enumerate(bodies):
        if statuses[i] == 201 and body["match_id"] not in ref.matches:
            assert body["match_id"] not in first_of, ("two submissions of one match_id both stored", bodies)
            first_of[body["match_id"]] = i
    order.sort(key=lambda i: 0 if first_of.get(bodies[i]["match_id"]) == i else 1)
    expected = [0] * len(bodies)
    for i in order:
        expected[i] = ref.submit(bodies[i])
    return expected


@settings(
    max_examples=examples(loop=12, deep=25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(waves=waves)
def test_gathered_single_submissions_answer_as_alone_and_build_the_reference_boards(world, service, waves) -> None:
    game, server = world
    reset_results()
    ref = Reference({b.slug: b for b in BOARDS}, "UTC", [SEASON])
    sent: list[dict[str, Any]] = []
    for wave in waves:
        bodies = []
        for s in wave:
            body = (sent[s % len(sent)] if sent else None) if isinstance(s, int) else s
            if body is not None:
                bodies.append(body)
        if not bodies:
            continue
        # the group closes once every submission of the wave has arrived: they are one group
        service.service.gather_max = len(bodies)
        groups_before = service.service.stats.groups
        answers = _post_concurrently(server, bodies)
        statuses = [a.status_code for a in answers]
        expected = _expected_wave(ref, bodies, statuses)
        assert statuses == expected, (bodies, [a.content for a in answers])
        for body, answer in zip(bodies, answers, strict=True):
            got = answer.json()
            if answer.status_code in (200, 201):
                assert got["match_id"] == body["match_id"] and got["status"] == "accepted"
                assert got["duplicate"] is (answer.status_code == 200)
            else:
                code = _refusal(body) if answer.status_code == 400 else "match_conflict"
                assert got["error"]["code"] == code, got
        # one shared group for the wave's distinct match_ids; each repeat of one of them in the
        # group after (judged against what the first stored, as it would be alone)
        stats = service.service.stats
        sizes = list(stats.recent)[len(stats.recent) - (stats.groups - groups_before) :]
        distinct = len({b["match_id"] for b in bodies})
        assert sizes[0] == distinct and sum(sizes) == len(bodies), sizes
        sent.extend(bodies)

    projected()
    stored = {
        (pv.board.slug, pv.window, pv.player.external_id): pv.value
        for pv in PlayerValue.objects.select_related("board", "player")
    }
    assert stored == {k: v.value for k, v in ref.values.items()}
    for board_slug, window in ref.windows_with_values():
        want = ref.order(board_slug, window)
        in_redis = selectors.board_range(
            cached_board("gath", board_slug=board_slug), window=window, start=0, stop=len(want) + 5
        )
        assert [e.external_id for e in in_redis] == want, (board_slug, window)
    # every stored match whole: its results as the reference took them, nothing of a refused one
    assert set(Match.objects.filter(game=game).values_list("match_id", flat=True)) == set(ref.matches)
    for match_id, canonical in ref.matches.items():
        body = json.loads(canonical)
        results = Result.objects.filter(match__game=game, match__match_id=match_id)
        assert sorted((r.player.external_id, r.board.slug, r.score) for r in results) == sorted(
            (r["player"], r["board"], r["score"]) for r in body["results"]
        )


def test_without_the_service_a_submission_is_503_and_stores_nothing(world, settings) -> None:
    """WEB_APPEND_SERVICE on and nothing listening (the service restarting): the service is the
    only store of a single submission, so the answer is the retry of docs/api.md §4.5."""
    _, server = world
    settings.WEB_APPEND_SERVICE = True
    settings.WEB_APPEND_SOCKET = str(Path(tempfile.mkdtemp(prefix="lb-gather-")) / "none.sock")
    body = {"match_id": "alone", "ended_at": MOMENTS[0], "results": [{"player": "a", "board": "high", "score": 2}]}
    refused = server.post(URL, body)
    assert refused.status_code == 503, refused.content
    assert refused.json()["error"]["code"] == "overloaded" and refused["Retry-After"] == "1"
    assert not Match.objects.filter(match_id="alone").exists()


def test_the_wire_to_the_service_carries_every_field_of_a_result() -> None:
    """Every field of ResultIn set, through the socket's encoding and back: a field the wire
    forgot would be stored as never sent by whichever request the service stored."""
    values = {
        "player": "a",
        "board": "high",
        "score": 7,
        "display_name": "A",
        "metadata": {"car": "red"},
        "region": "eu",
        "subscores": {"kills": 3},
    }
    assert set(values) == {f.name for f in dataclasses.fields(ResultIn)}  # a new field: add it here
    sent = MatchIn("m1", datetime(2026, 11, 22, 12, 0, tzinfo=UTC), (ResultIn(**values),))
    assert _match_decode(orjson.loads(orjson.dumps(_match_encode(sent)))) == sent


def test_subscores_handed_to_the_service_rank_the_board(transactional_db, real_projector, service) -> None:
    arena = RefBoard("arena", "desc", "best", 0, 100, subscores=(("kills", "desc", 0, 50),))
    _, server = game_with_boards("gath", [(arena, "unique")])
    for i, (player, kills) in enumerate([("few", 2), ("many", 9)]):
        body = {
            "match_id": f"s{i}",
            "ended_at": MOMENTS[0],
            "results": [{"player": player, "board": "arena", "score": 40, "subscores": {"kills": kills}}],
        }
        assert server.post(URL, body).status_code == 201
    assert service.service.stats.groups >= 2  # stored by the service, not by the requests
    projected()
    response = server.get("/api/v1/games/gath/boards/arena/top?limit=10")
    assert [(e["player"], e["subscores"]) for e in response.json()["entries"]] == [
        ("many", {"kills": 9}),
        ("few", {"kills": 2}),
    ]
