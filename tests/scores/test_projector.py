"""The projector (scores/projection/): a submission is durable when the request returns and
reaches values and boards when a batch applies it, exactly once, however batches stop."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from anticheat.services import Actor, match_approve, matches_void
from boards import selectors
from boards.receivers import mirror_accepted_scores
from boards.services import outbox_drain
from scores import locks
from scores.locks import LANES, lane_of
from scores.models import Match, Pending, PlayerValue, WindowCutoff
from scores.projection import batch_apply, pending_apply, pending_lag
from scores.selectors import cached_board
from scores.signals import score_accepted
from seasons import services as seasons
from tests.conftest import SignedClient

pytestmark = pytest.mark.without_projector("these tests run the projector's batches by hand")

URL = "/api/v1/games/chess/matches"
AT = "2026-11-29T18:59:58Z"


def submit(server: SignedClient, match_id: str, results: list[dict], at: str = AT) -> dict:
    response = server.post(URL, {"match_id": match_id, "ended_at": at, "results": results})
    assert response.status_code == 201, response.content  # every match here is new: 201 (docs/api.md §4)
    return response.json()


def value(board: str, player: str, window: str = "all") -> int | None:
    found = PlayerValue.objects.filter(board__slug=board, window=window, player__external_id=player).first()
    return found.value if found else None


def on_board(board: str, window: str = "all") -> list[tuple[str, int]]:
    return [
        (e.external_id, e.value)
        for e in selectors.board_range(cached_board("chess", board_slug=board), window=window, start=0, stop=100)
    ]


def test_a_submission_counts_once_a_batch_applies_it(server, game) -> None:
    submit(
        server, "m1", [{"player": "p1", "board": "points", "score": 7}, {"player": "p2", "board": "rating", "score": 5}]
    )
    assert Match.objects.filter(match_id="m1").exists()  # durable when the request returns
    assert value("points", "p1") is None and on_board("points") == []
    assert pending_lag()[0] >= 1
    report = batch_apply()
    assert report.matches == 1 and report.results == 2
    assert value("points", "p1") == 7 and value("rating", "p2") == 5
    assert on_board("points") == [("p1", 7)] and on_board("rating") == [("p2", 5)]
    assert not Pending.objects.exists() and pending_lag() == (0, None)
    assert not batch_apply().rows  # nothing left: applying again counts nothing twice
    assert value("points", "p1") == 7


def test_a_batch_spans_whatever_is_pending_and_totals_add_up(server, game) -> None:
    for i in range(5):
        submit(server, f"m{i}", [{"player": "p1", "board": "points", "score": 10}])
    assert batch_apply(max_matches=2).matches == 2  # whole pending rows, up to the limit
    assert value("points", "p1") == 20
    assert pending_apply() == 3
    assert value("points", "p1") == 50 and on_board("points") == [("p1", 50)]


def test_a_batch_rolled_back_midway_leaves_its_matches_pending(server, game) -> None:
    """A crash before the batch commits: Postgres rolls back values and progress together."""
    submit(server, "m1", [{"player": "p1", "board": "points", "score": 10}])

    class Crash(Exception):
        pass

    with pytest.raises(Crash), transaction.atomic():
        assert batch_apply().matches == 1
        assert value("points", "p1") == 10  # written inside the doomed transaction
        raise Crash
    assert value("points", "p1") is None and Pending.objects.count() == 1
    batch_apply()
    assert value("points", "p1") == 10


def test_a_batch_whose_redis_write_never_happened_is_healed_by_the_outbox(server, game) -> None:
    """The process dies between the Postgres commit and the Redis write: the values are
    durable, the outbox row says what Redis lacks, and the periodic drain writes it."""
    submit(server, "m1", [{"player": "p1", "board": "points", "score": 10}])
    score_accepted.disconnect(dispatch_uid="boards.mirror_accepted_scores")
    try:
        batch_apply()
    finally:
        score_accepted.connect(mirror_accepted_scores, dispatch_uid="boards.mirror_accepted_scores")
    assert value("points", "p1") == 10 and on_board("points") == []
    outbox_drain(grace_seconds=0)
    assert on_board("points") == [("p1", 10)]


def test_a_projector_batch_is_a_fixed_handful_of_statements(server, game) -> None:
    def statements_of_a_batch(results_of) -> list[str]:
        for i in range(3):
            submit(server, f"{results_of(0)['player']}-m{i}", [results_of(i)])
        with CaptureQueriesContext(connection) as ctx:
            assert batch_apply().matches == 3
        return [q["sql"].split()[0].upper() for q in ctx.captured_queries]

    for board in ("rating", "points"):  # the boards' configuration is now cached in this process
        submit(server, f"warm-up-{board}", [{"player": "w", "board": board, "score": 5}])
    batch_apply()
    # the locks, the fold (one statement: claim the oldest pending rows, read their results,
    # expand into windows, cutoffs, aggregate, upsert, names), the outbox: however many
    # matches, boards, windows or display names the batch holds; the events feed's drafts
    # (scores/events.py, published at COMMIT by their trigger)
    plain = statements_of_a_batch(lambda i: {"player": f"p{i}", "board": "rating", "score": 5})
    assert plain == ["BEGIN", "SELECT", "WITH", "INSERT", "INSERT", "COMMIT"], plain
    named = statements_of_a_batch(
        lambda i: {"player": f"q{i}", "board": ("rating", "points")[i % 2], "score": 5, "display_name": "Q"}
    )
    assert named == plain, named


def test_a_new_display_name_reaches_the_player_with_the_batch(server, game) -> None:
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 5, "display_name": "Ann"}])
    batch_apply()
    submit(server, "m2", [{"player": "p1", "board": "rating", "score": 6, "display_name": "Anna"}])
    batch_apply()
    assert [
        e.display_name
        for e in selectors.board_range(cached_board("chess", board_slug="rating"), window="all", start=0, stop=1)
    ] == ["Anna"]


def test_lanes_divide_players_and_a_busy_lane_is_skipped(server, game) -> None:
    submit(server, "m1", [{"player": f"p{i}", "board": "rating", "score": i} for i in range(40)])
    rows = list(Pending.objects.values_list("lane", flat=True))
    assert len(rows) == len(set(rows)) > 1 and set(rows) <= set(range(LANES))  # one row per lane touched
    first, *rest = sorted(rows)
    report = batch_apply(lanes=[first])
    assert report.lanes == [first] and report.rows == 1
    counted = set(PlayerValue.objects.filter(window="all").values_list("player_id", flat=True))
    assert counted and {lane_of(p) for p in counted} == {first}
    seen = {}

    def projector_elsewhere() -> None:
        try:
            seen["report"] = batch_apply()
        finally:
            connection.close()

    with transaction.atomic():
        locks.apply_lock(rest)  # as a void holds its players' lanes until it commits
        thread = threading.Thread(target=projector_elsewhere)
        thread.start()
        thread.join(30)
    assert seen["report"].rows == 0 and not set(seen["report"].lanes) & set(rest)
    pending_apply()
    assert PlayerValue.objects.filter(window="all").count() == 40


def test_a_void_racing_unapplied_matches_counts_each_once(server, game) -> None:
    """A total board: the void recomputes from what is applied, never from results the
    projector is about to add again."""
    submit(server, "a", [{"player": "p1", "board": "points", "score": 10}])
    batch_apply()
    submit(server, "b", [{"player": "p1", "board": "points", "score": 20}])  # not applied yet
    submit(server, "c", [{"player": "p1", "board": "points", "score": 40}])
    a = Match.objects.get(match_id="a")
    matches_void(game=game, match_pks=[a.pk], reason="cheat", actor=Actor("test"))
    assert value("points", "p1") == 60  # b and c, applied by the void's own drain, a gone
    pending_apply()
    assert value("points", "p1") == 60
    outbox_drain(grace_seconds=0)
    assert on_board("points") == [("p1", 60)]


def test_a_void_of_a_match_not_applied_yet_never_counts_it(server, game) -> None:
    submit(server, "a", [{"player": "p1", "board": "points", "score": 10}])
    submit(server, "b", [{"player": "p1", "board": "points", "score": 5}])
    matches_void(game=game, match_pks=[Match.objects.get(match_id="a").pk], reason="cheat", actor=Actor("test"))
    pending_apply()
    assert value("points", "p1") == 5
    outbox_drain(grace_seconds=0)
    assert on_board("points") == [("p1", 5)]


def test_a_window_frozen_ahead_of_the_clock_takes_no_later_result(server, game) -> None:
    """docs/api.md §4: a result for a frozen window counts in the windows still open, even
    when an operator froze a window before it ended (close_windows --now ... --force)."""
    today = timezone.now().date()
    at = datetime(today.year, today.month, today.day, 0, 0, 5, tzinfo=UTC).isoformat()
    submit(server, "early", [{"player": "p1", "board": "rating", "score": 5}], at=at)
    daily = f"daily:{today.isoformat()}"
    freeze = seasons.window_freeze(board=cached_board("chess", board_slug="rating"), window=daily, reason="early")
    assert freeze.entries == 1  # the pending submission was applied before the standings were read
    late = submit(server, "late", [{"player": "p2", "board": "rating", "score": 9}], at=at)
    assert late["missed_windows"] == [daily]
    pending_apply()
    assert value("rating", "p2", daily) is None and value("rating", "p2") == 9
    assert [p for p, _ in on_board("rating", daily)] == ["p1"]
    assert WindowCutoff.objects.filter(window=daily).count() == 1


def test_an_approval_counts_the_held_match_now_but_not_in_windows_frozen_meanwhile(server, game) -> None:
    at = "2026-11-20T10:00:00Z"
    submit(server, "a", [{"player": "p1", "board": "rating", "score": 5}], at=at)
    held = Match.objects.get(match_id="a")
    Match.objects.filter(pk=held.pk).update(status="held")  # as the rules hold one on arrival
    seasons.window_freeze(board=cached_board("chess", board_slug="rating"), window="daily:2026-11-20", reason="closed")
    match_approve(match=held, actor=Actor("test"))
    assert value("rating", "p1") == 5  # applied by the approval itself
    assert value("rating", "p1", "daily:2026-11-20") is None
    held.refresh_from_db()
    assert held.counts_from is not None and held.counts_from > held.received_at


def test_lag_is_the_age_of_the_oldest_pending_match(server, game) -> None:
    before = timezone.now()
    submit(server, "m1", [{"player": "p1", "board": "rating", "score": 5}])
    count, oldest = pending_lag()
    assert count == 1 and before - timedelta(seconds=1) <= oldest <= timezone.now()
