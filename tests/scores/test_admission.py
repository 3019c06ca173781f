"""Admission control (docs/api.md §4.5, scores/admission.py): while the boards are too far behind,
a submission is answered 503 `overloaded` with Retry-After and nothing of it is stored; what
was acknowledged keeps the 1 s promise of docs/api.md §4.4.

Admission control is off in the test settings (other tests build backlogs on purpose); these
tests turn it on."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from boards import index
from scores import admission
from scores.ingest import matches_submit
from scores.ingest.matches import MatchIn, ResultIn
from scores.locks import ADMIT
from scores.models import Board, Game, Match, Player, ProjectorPace
from scores.projection import pending_lag
from scores.projection.pace import SAMPLE_LIFE_SECONDS, Pace
from tests.conftest import SignedClient, set_keys
from tests.polling import until

pytestmark = pytest.mark.without_projector(
    "the backlog is built on purpose; a test that wants a projector starts its own"
)

URL = "/api/v1/games/chess/matches"


def a_match(match_id: str, player: str, score: int = 7) -> dict:
    return {
        "match_id": match_id,
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": player, "board": "points", "score": score}],
    }


@pytest.fixture
def admission_on(settings):
    settings.ADMISSION_MAX_LAG_MS = 300
    settings.ADMISSION_MAX_PENDING = 5000
    settings.ADMISSION_REFRESH_MS = 50
    admission.backlog_forget()
    yield settings
    admission.backlog_forget()


def assert_overloaded(response) -> None:
    assert response.status_code == 503, response.content
    assert response.json()["error"]["code"] == "overloaded"
    assert response.json()["error"]["message"]
    assert int(response["Retry-After"]) >= 1


def _refused_total() -> float:
    body = Client().get("/metrics").content.decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in body.splitlines()
        if line.startswith("leaderboard_ingest_refused_total{")
    )


def test_with_no_projector_the_backlog_ages_and_submissions_are_refused_unstored(
    server: SignedClient, game, admission_on
) -> None:
    assert server.post(URL, a_match("m-first", "p1")).status_code == 201  # nothing waits yet
    until(lambda: admission.backlog_read().oldest_seconds > 0.3, "the pending row older than the bound", every=0.02)
    refused_before = _refused_total()

    assert_overloaded(server.post(URL, a_match("m-single", "p2")))
    assert_overloaded(server.post(URL + "/batch", {"matches": [a_match("m-b1", "p3"), a_match("m-b2", "p4")]}))

    assert set(Match.objects.values_list("match_id", flat=True)) == {"m-first"}
    assert not Player.objects.filter(external_id__in=["p2", "p3", "p4"]).exists()
    assert pending_lag()[0] == 1
    assert _refused_total() == refused_before + 2


def test_too_many_matches_waiting_are_refused_however_young(server: SignedClient, game, admission_on) -> None:
    admission_on.ADMISSION_MAX_LAG_MS = 60_000
    admission_on.ADMISSION_MAX_PENDING = 3
    response = server.post(URL + "/batch", {"matches": [a_match(f"m{i}", f"p{i}") for i in range(4)]})
    assert response.status_code == 200
    admission.backlog_forget()
    assert_overloaded(server.post(URL, a_match("m-late", "p9")))
    assert not Match.objects.filter(match_id="m-late").exists()


def test_the_backlog_is_read_once_per_refresh_interval_not_per_request(
    server: SignedClient, game, admission_on
) -> None:
    admission_on.ADMISSION_REFRESH_MS = 60_000
    with CaptureQueriesContext(connection) as first:
        assert server.post(URL, a_match("m1", "p1")).status_code == 201
    with CaptureQueriesContext(connection) as second:
        assert server.post(URL, a_match("m2", "p2")).status_code == 201
    reads = [q["sql"] for q in first.captured_queries if "FROM scores_pending ORDER BY id" in q["sql"]]
    assert len(reads) == 1
    assert [q for q in second.captured_queries if "FROM scores_pending ORDER BY id" in q["sql"]] == []


def _pace(seconds_per_match: float) -> None:
    """What a running projector publishes of its pace (scores/projection/pace.py)."""
    ProjectorPace.objects.create(
        name="projector-under-test", seconds_per_match=seconds_per_match, updated_at=timezone.now()
    )


def test_a_young_backlog_that_would_take_too_long_to_apply_is_refused(server: SignedClient, game, admission_on) -> None:
    """The oldest row is young, but the projector's pace says what waits would show too late."""
    admission_on.ADMISSION_MAX_LAG_MS = 10_000
    admission_on.ADMISSION_REFRESH_MS = 60_000  # one reading: what this process accepted since counts
    _pace(2.5)  # 4 matches are 10 s of work for this projector
    for i in range(4):
        assert server.post(URL, a_match(f"m{i}", f"p{i}")).status_code == 201
    response = server.post(URL, a_match("m-late", "p-late"))
    assert_overloaded(response)
    assert "would take 12.50 s" in response.json()["error"]["message"]
    assert not Match.objects.filter(match_id="m-late").exists()
    assert admission.backlog_read().oldest_seconds < 10


def test_a_stopped_projectors_pace_is_not_used(server: SignedClient, game, admission_on) -> None:
    admission_on.ADMISSION_MAX_LAG_MS = 10_000
    ProjectorPace.objects.create(name="gone", seconds_per_match=60.0, updated_at=timezone.now() - timedelta(minutes=5))
    for i in range(3):
        assert server.post(URL, a_match(f"m{i}", f"p{i}")).status_code == 201


def test_the_projector_publishes_its_pace_and_takes_it_away_when_it_stops(
    server: SignedClient, game, projector_process
) -> None:
    proc = projector_process()
    until(lambda: Client().get("/healthz").json().get("projector") == "ok", "the projector owning its lanes")
    batch = {"matches": [a_match(f"m{i}", f"p{i}") for i in range(150)]}  # one batch, large enough to sample
    assert server.post(URL + "/batch", batch).status_code == 200
    pace = until(lambda: ProjectorPace.objects.first(), "the projector's pace published")
    assert 0 < pace.seconds_per_match < 1
    assert admission.backlog_read().seconds_per_match == pytest.approx(pace.seconds_per_match)
    proc.terminate()
    proc.wait(30)
    assert not ProjectorPace.objects.exists()


def _in_wait_for_admission() -> bool:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND NOT granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [ADMIT],
        )
        return cur.fetchone()[0] > 0


def test_large_batches_are_admitted_one_at_a_time_each_seeing_the_last(
    server: SignedClient, game, admission_on
) -> None:
    """Two web processes each read an empty backlog; each then gets a 60-match batch (6 s of
    work at this pace, over a quarter of the bound). The first is admitted; the second waits for
    its commit, sees its matches waiting, and is refused: 12 s would break the bound of 10."""
    admission_on.ADMISSION_MAX_LAG_MS = 10_000
    admission_on.ADMISSION_REFRESH_MS = 60_000
    _pace(0.1)
    first = [MatchIn(f"a{i}", timezone.now(), (ResultIn(player=f"pa{i}", board="points", score=5),)) for i in range(60)]
    second = {"matches": [a_match(f"b{i}", f"pb{i}") for i in range(60)]}
    stored, release = threading.Event(), threading.Event()
    answers: list = []

    def first_process() -> None:
        try:
            with transaction.atomic():
                matches_submit(game=Game.objects.get(slug="chess"), server_key=None, matches=first)
                stored.set()
                release.wait(30)
        finally:
            connection.close()

    def second_process() -> None:
        try:
            answers.append(server.post(URL + "/batch", second))
        finally:
            connection.close()

    a = threading.Thread(target=first_process)
    a.start()
    assert stored.wait(30)
    admission.backlog_forget()  # the second process's reading: taken before the first commits
    b = threading.Thread(target=second_process)
    b.start()
    until(_in_wait_for_admission, "the second batch waiting for the first to commit", every=0.02)
    release.set()
    a.join(30)
    b.join(30)
    assert_overloaded(answers[0])
    assert Match.objects.filter(match_id__startswith="a").count() == 60
    assert not Match.objects.filter(match_id__startswith="b").exists()
    assert not Player.objects.filter(external_id__startswith="pb").exists()


def test_admission_off_never_refuses(server: SignedClient, game, admission_on) -> None:
    admission_on.ADMISSION_MAX_LAG_MS = 0
    admission_on.ADMISSION_MAX_PENDING = 0
    server.post(URL, a_match("m1", "p1"))
    assert server.post(URL, a_match("m2", "p2")).status_code == 201


class _BoardWatch(threading.Thread):
    """Reads the board's sorted sets every few milliseconds and notes when each member first
    shows (Redis only: the thread needs no database connection)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(daemon=True)
        self.keys = keys
        self.first_seen: dict[int, float] = {}
        self.stopping = threading.Event()

    def run(self) -> None:
        r = index.index()
        while not self.stopping.is_set():
            now = time.monotonic()
            for key in self.keys:
                for member in r.zrange(key, 0, -1):
                    self.first_seen.setdefault(int(member), now)
            self.stopping.wait(0.005)


def test_overload_every_acknowledged_result_is_visible_within_a_second(
    server: SignedClient, game, admission_on, projector_process
) -> None:
    """Ingest faster than the projector applies: the projector is slowed on purpose (batches of
    5 matches, a 100 ms pause after each: ~50 matches/s), this test submits one match after
    another as fast as one client can (hundreds a second in process)."""
    admission_on.ADMISSION_MAX_PENDING = 5  # one batch of this projector
    admission_on.ADMISSION_MAX_LAG_MS = 200  # margin for a shared, busy test machine
    admission_on.ADMISSION_REFRESH_MS = 20
    projector_process("--max-matches", "5", "--pause-ms", "100")
    until(lambda: Client().get("/healthz").json().get("projector") == "ok", "the projector owning its lanes")
    watch = _BoardWatch(set_keys(Board.objects.get(game=game, slug="points").pk, "all"))
    watch.start()
    acked: dict[str, float] = {}  # player -> when its 2xx arrived
    refused: list[str] = []
    deadline = time.monotonic() + 60
    i = 0
    try:
        while (len(refused) < 50 or len(acked) < 50) and time.monotonic() < deadline:
            player = f"p{i}"
            response = server.post(URL, a_match(f"m{i}", player))
            if response.status_code == 503:
                assert_overloaded(response)
                refused.append(player)
            else:
                assert response.status_code == 201, response.content
                acked[player] = time.monotonic()
            i += 1
        assert len(refused) >= 50 and len(acked) >= 50, (len(refused), len(acked))
        pks = dict(Player.objects.filter(external_id__in=list(acked)).values_list("external_id", "pk"))
        until(lambda: all(pks[p] in watch.first_seen for p in acked), "every acknowledged result on the board")
    finally:
        watch.stopping.set()
        watch.join()
    late = {p: round(watch.first_seen[pks[p]] - at, 3) for p, at in acked.items() if watch.first_seen[pks[p]] - at > 1}
    assert late == {}
    # nothing refused is stored
    assert not Match.objects.filter(match_id__in=[f"m{p[1:]}" for p in refused]).exists()
    assert not Player.objects.filter(external_id__in=refused).exists()


def test_a_pace_no_large_batch_confirms_is_withdrawn_and_batches_are_admitted_again(
    server: SignedClient, game, admission_on
) -> None:
    """A pace sampled on a saturated machine (1.43 ms a match) prices a lone 1,000-match batch
    past the bound, and refused batches never give the projector a new sample: the pace must
    go by itself (scores/projection/pace.py, SAMPLE_LIFE_SECONDS), or batch ingest stays refused."""
    admission_on.ADMISSION_MAX_LAG_MS = 500
    admission_on.ADMISSION_REFRESH_MS = 0
    pace = Pace("projector-under-test")
    pace.sample(matches=1000, seconds=1.43, now=0.0)
    assert pace.publish(now=0.0)
    batch = {"matches": [a_match(f"m{i}", f"p{i}") for i in range(600)]}
    assert_overloaded(server.post(URL + "/batch", batch))  # 600 x 1.43 ms > 1.5 x 0.5 s, even alone

    pace.sample(matches=20, seconds=1.0, now=20.0)  # the projector's small batches: no sample
    pace.publish(now=20.0)
    assert admission.backlog_read().seconds_per_match == pytest.approx(0.00143)
    assert pace.publish(now=0.0 + SAMPLE_LIFE_SECONDS + 1)  # withdrawn
    assert admission.backlog_read().seconds_per_match is None
    assert server.post(URL + "/batch", batch).status_code == 200

    pace.sample(matches=600, seconds=0.12, now=40.0)  # the admitted batch's sample: a pace again
    assert pace.publish(now=40.0)
    assert admission.backlog_read().seconds_per_match == pytest.approx(0.0002)
