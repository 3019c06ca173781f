"""docs/api.md §3.1, §4 over the API: every status code, and nothing stored on refusal. On the path
users run: the request commits and NOTIFYs, the projector process applies it (tests/projector.py);
what the boards hold is read after `projected()`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from boards import index
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Match, PlayerValue, Result
from scores.services import server_key_revoke
from tests.conftest import SignedClient, set_keys
from tests.factories import GameFactory, server_key
from tests.projector import projected

# one Redis, and the cluster with sharded boards; the real projector process
pytestmark = pytest.mark.usefixtures("topology", "real_projector")
# refused before anything is stored or read: one Redis is enough (tests/conftest.py one_redis)
REFUSAL = pytest.mark.one_redis("about a refusal, decided before any board is read")

URL = "/api/v1/games/chess/matches"


def a_match(match_id: str = "m-1", **overrides):
    body = {
        "match_id": match_id,
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": "p42", "board": "rating", "score": 1450, "display_name": "Alice"}],
    }
    body.update(overrides)
    return body


def top_entries(board: str) -> list[tuple[str, int]]:
    """The board's all-time top as a reader gets it (docs/api.md §5.1): (player, score)."""
    response = Client().get(f"/api/v1/games/chess/boards/{board}/top", {"window": "all"})
    assert response.status_code == 200, response.content
    return [(e["player"], e["score"]) for e in response.json()["entries"]]


def assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"]
    if code:
        assert body["error"]["code"] == code, body
    return body


def test_accepted_match_is_stored_and_mirrored(server: SignedClient, game) -> None:
    response = server.post(URL, a_match())
    assert response.status_code == 201
    assert response.json() == {"match_id": "m-1", "status": "accepted", "duplicate": False}
    projected()
    # every window the board keeps, derived from ended_at in the game's time zone
    windows = set(PlayerValue.objects.values_list("window", flat=True))
    assert windows == {"all", "daily:2026-11-29", "weekly:2026-W48", "monthly:2026-11", "season:s1"}
    board_id = game.boards.get(slug="rating").id
    for window in windows:
        assert sum(index.index().zcard(k) for k in set_keys(board_id, window)) == 1


def test_same_match_again_is_a_duplicate_that_counts_once(server: SignedClient) -> None:
    assert server.post(URL, a_match()).status_code == 201
    again = server.post(URL, a_match())
    assert again.status_code == 200
    assert again.json() == {"match_id": "m-1", "status": "accepted", "duplicate": True}
    assert Match.objects.count() == 1 and Result.objects.count() == 1


def test_points_board_total_is_not_doubled_by_a_retry(server: SignedClient) -> None:
    body = a_match(results=[{"player": "p1", "board": "points", "score": 10}])
    assert server.post(URL, body).status_code == 201
    assert server.post(URL, body).status_code == 200
    projected()
    assert PlayerValue.objects.get(window="all").value == 10
    assert top_entries("points") == [("p1", 10)]  # what a reader sees


def test_same_match_id_with_another_body_is_409(server: SignedClient) -> None:
    assert server.post(URL, a_match()).status_code == 201
    other = a_match(results=[{"player": "p42", "board": "rating", "score": 9999}])
    assert_error(server.post(URL, other), 409, "match_conflict")
    projected()
    assert PlayerValue.objects.get(window="all").value == 1450


@REFUSAL
@pytest.mark.parametrize(
    "body, code",
    [
        ({"ended_at": "2026-11-29T18:59:58Z", "results": []}, "invalid_body"),
        (a_match(results=[]), "invalid_body"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": 1}] * 101), "invalid_body"),
        (a_match(match_id=""), "invalid_body"),
        (a_match(match_id="x" * 129), "invalid_body"),
        (a_match(match_id="tab\there"), "invalid_body"),
        (a_match(ended_at="2026-11-29T18:59:58"), "invalid_body"),  # no offset
        (a_match(ended_at="yesterday"), "invalid_body"),
        (a_match(results=[{"player": "p 1", "board": "rating", "score": 1}]), "invalid_body"),
        (a_match(results=[{"player": "x" * 65, "board": "rating", "score": 1}]), "invalid_body"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": 1.5}]), "invalid_body"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": "12"}]), "invalid_body"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": True}]), "invalid_body"),
        (a_match(results=[{"player": "p1", "board": "rating"}]), "invalid_body"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": 1, "display_name": ""}]), "invalid_body"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": 1, "metadata": [1]}]), "invalid_body"),
        (
            a_match(results=[{"player": "p1", "board": "rating", "score": 1, "metadata": {"x": "y" * 1100}}]),
            "invalid_body",
        ),
        (a_match(results=[{"player": "p1", "board": "nope", "score": 1}]), "unknown_board"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": -1}]), "score_out_of_bounds"),
        (a_match(results=[{"player": "p1", "board": "rating", "score": 10_000_001}]), "score_out_of_bounds"),
        (a_match(results=[{"player": "p1", "board": "golf", "score": 17}]), "score_out_of_bounds"),
    ],
)
def test_invalid_match_is_400_and_stores_nothing(server: SignedClient, body, code) -> None:
    # a valid first result, so a partial store would show
    if "results" in body and body["results"] and len(body["results"]) <= 100:
        body["results"] = [{"player": "ok", "board": "rating", "score": 5}, *body["results"]]
    assert_error(server.post(URL, body), 400, code)
    projected()
    assert not Match.objects.exists() and not Result.objects.exists() and not PlayerValue.objects.exists()
    # nothing of it reached Redis (nor the cluster's index)
    assert {k.decode() for r in {get_redis(), index.index()} for k in r.scan_iter()} <= {keys.BUILT_MARKER}


@REFUSAL
def test_ended_at_more_than_60s_in_future_is_400(server: SignedClient) -> None:
    soon = (timezone.now() + timedelta(seconds=30)).isoformat()
    later = (timezone.now() + timedelta(seconds=120)).isoformat()
    assert server.post(URL, a_match("m-soon", ended_at=soon)).status_code == 201
    assert_error(server.post(URL, a_match("m-late", ended_at=later)), 400, "ended_at_in_future")
    assert not Match.objects.filter(match_id="m-late").exists()


@REFUSAL
def test_not_json_is_400(server: SignedClient) -> None:
    assert_error(server.post(URL, raw=b"{not json"), 400, "invalid_json")
    assert_error(server.post(URL, raw=b"[1, 2]"), 400, "invalid_body")  # JSON, not a match object
    assert not Match.objects.exists()


@REFUSAL
def test_oversized_body_is_413(server: SignedClient, settings) -> None:
    from django.conf import settings as live

    big = b"{" + b" " * (live.MAX_REQUEST_BODY_BYTES + 1) + b"}"
    assert_error(server.post(URL, raw=big), 413, "payload_too_large")
    assert not Match.objects.exists()


# --- authentication (docs/api.md §3.1) ----------------------------------------------------


@REFUSAL
def test_missing_signature_is_401(server: SignedClient) -> None:
    response = server.client.post(URL, json.dumps(a_match()), content_type="application/json")
    assert_error(response, 401, "not_authenticated")
    assert not Match.objects.exists()


@REFUSAL
def test_wrong_signature_is_401(server: SignedClient) -> None:
    forged = SignedClient(server.key_id, "not-the-secret")
    assert_error(forged.post(URL, a_match()), 401, "authentication_failed")
    assert not Match.objects.exists()


@REFUSAL
def test_malformed_signature_is_401(server: SignedClient) -> None:
    body = json.dumps(a_match()).encode()
    for header in ["garbage", "t=abc,v1=00", "t=1,v1=zz", f"v1={'0' * 64}"]:
        response = server.client.post(
            URL, body, content_type="application/json", headers={"X-Key-Id": server.key_id, "X-Signature": header}
        )
        assert_error(response, 401, "authentication_failed")
    assert not Match.objects.exists()


@REFUSAL
def test_unknown_key_is_401(server: SignedClient) -> None:
    assert_error(SignedClient("sk_unknown", server.secret).post(URL, a_match()), 401, "authentication_failed")
    assert not Match.objects.exists()


@REFUSAL
def test_tampered_body_is_401(server: SignedClient) -> None:
    from leaderboard_client.signing import sign

    signed = json.dumps(a_match()).encode()
    sent = json.dumps(a_match(results=[{"player": "p42", "board": "rating", "score": 9999999}])).encode()
    headers = {"X-Key-Id": server.key_id, "X-Signature": sign(server.secret, "POST", URL, signed)}
    assert_error(
        server.client.post(URL, sent, content_type="application/json", headers=headers), 401, "authentication_failed"
    )
    assert not Match.objects.exists()


# Well past the 300 s window on either side: the timestamp is whole seconds, and on a loaded
# machine the request can reach the server a few seconds after it was signed, so a skew of
# 301 could land back inside the window.
@REFUSAL
@pytest.mark.parametrize("skew", [-330, 330])
def test_stale_or_future_signature_is_401(server: SignedClient, skew: int) -> None:
    from leaderboard_client.signing import sign

    body = json.dumps(a_match()).encode()
    t = int(datetime.now(UTC).timestamp()) + skew
    headers = {"X-Key-Id": server.key_id, "X-Signature": sign(server.secret, "POST", URL, body, timestamp=t)}
    assert_error(
        server.client.post(URL, body, content_type="application/json", headers=headers), 401, "authentication_failed"
    )
    assert not Match.objects.exists()


@REFUSAL
def test_signature_covers_the_query_string(server: SignedClient) -> None:
    from leaderboard_client.signing import sign

    body = json.dumps(a_match()).encode()
    headers = {"X-Key-Id": server.key_id, "X-Signature": sign(server.secret, "POST", URL, body)}
    response = server.client.post(URL + "?x=1", body, content_type="application/json", headers=headers)
    assert_error(response, 401, "authentication_failed")
    assert server.post(URL + "?x=1", a_match()).status_code == 201


@REFUSAL
def test_key_of_another_game_is_403(server: SignedClient, game) -> None:
    other = GameFactory(slug="go")
    key, secret = server_key(other)
    assert_error(SignedClient(key.key_id, secret).post(URL, a_match()), 403, "forbidden")
    assert not Match.objects.exists()


@REFUSAL
def test_revoked_key_is_refused_on_its_next_request(server: SignedClient, game) -> None:
    key = game.server_keys.get(key_id=server.key_id)
    assert server.post(URL, a_match("m-a")).status_code == 201
    server_key_revoke(key=key)
    assert_error(server.post(URL, a_match("m-b")), 403, "forbidden")
    assert not Match.objects.filter(match_id="m-b").exists()


@REFUSAL
def test_key_without_submit_scope_is_403(game) -> None:
    key, secret = server_key(game, scopes=("moderate",))
    assert_error(SignedClient(key.key_id, secret).post(URL, a_match()), 403, "forbidden")
    assert not Match.objects.exists()


@REFUSAL
def test_unknown_game_is_refused_without_storing(server: SignedClient) -> None:
    response = server.post("/api/v1/games/nope/matches", a_match())
    # the key is chess's: "a key of another game" (docs/api.md §3.1), before the game is looked up
    assert_error(response, 403, "forbidden")
    assert not Match.objects.exists()


@REFUSAL
def test_secret_is_not_in_the_database(server: SignedClient, game) -> None:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT row_to_json(k)::text FROM scores_serverkey k")
        dump = " ".join(row[0] for row in cur.fetchall())
    assert server.secret not in dump


# --- batch ----------------------------------------------------------------------------------


def test_batch_each_match_stands_alone(server: SignedClient) -> None:
    assert server.post(URL, a_match("m-old")).status_code == 201
    batch = {
        "matches": [
            a_match("m-1"),
            a_match("m-2", results=[{"player": "p1", "board": "nope", "score": 1}]),
            a_match("m-old"),
            a_match("m-old", results=[{"player": "p42", "board": "rating", "score": 1}]),
            {"match_id": "m-4"},
            a_match("m-5", results=[{"player": "p5", "board": "rating", "score": 10}]),
            "not an object",
        ]
    }
    response = server.post(URL + "/batch", batch)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["match_id"], r["status"], r["duplicate"]) for r in results] == [
        ("m-1", "accepted", False),
        ("m-2", "rejected", False),
        ("m-old", "accepted", True),
        ("m-old", "rejected", False),
        ("m-4", "rejected", False),
        ("m-5", "accepted", False),
        (None, "rejected", False),
    ]
    assert results[1]["error"]["code"] == "unknown_board"
    assert results[3]["error"]["code"] == "match_conflict"
    assert "error" not in results[0]
    assert set(Match.objects.values_list("match_id", flat=True)) == {"m-old", "m-1", "m-5"}
    projected()
    # on the board: p42 once (m-old and m-1 carry the same result), p5; nothing of the rejected
    assert top_entries("rating") == [("p42", 1450), ("p5", 10)]


def test_batch_with_the_same_match_twice_counts_it_once(server: SignedClient) -> None:
    body = a_match("m-1", results=[{"player": "p1", "board": "points", "score": 7}])
    results = server.post(URL + "/batch", {"matches": [body, body]}).json()["results"]
    assert [(r["status"], r["duplicate"]) for r in results] == [("accepted", False), ("accepted", True)]
    projected()
    assert PlayerValue.objects.get(window="all").value == 7


@REFUSAL
@pytest.mark.parametrize("body", [{"matches": []}, {"matches": "x"}, {}, {"matches": [a_match()] * 1001}])
def test_batch_envelope_errors_are_400(server: SignedClient, body) -> None:
    assert_error(server.post(URL + "/batch", body), 400, "invalid_body")
    assert not Match.objects.exists()


@REFUSAL
def test_an_invalid_body_under_a_known_match_id_is_400_not_409(server: SignedClient) -> None:
    assert server.post(URL, a_match()).status_code == 201
    bad = a_match(results=[{"player": "p42", "board": "rating", "score": -5}])
    assert_error(server.post(URL, bad), 400, "score_out_of_bounds")
    projected()
    assert PlayerValue.objects.get(window="all").value == 1450


def test_single_submission_query_count_is_pinned(server: SignedClient, game) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    # the request alone (the projector process applies it later, its statements not here)
    assert (
        server.post(URL, a_match("warm-up")).status_code == 201
    )  # the server key and game config are now cached in this process
    at_the_answer = server.at_the_answer()  # no wait in the count
    with CaptureQueriesContext(connection) as ctx:
        better = a_match("m-counted", results=[{"player": "p42", "board": "rating", "score": 1500}])
        assert at_the_answer.post(URL, better).status_code == 201
    # One statement in one transaction: players, match, results, the projector's pending row,
    # with what was stored before and the windows' cutoffs read back (the game fixture's boards
    # have every anti-cheat rule off, so no Redis either); then the projector's wake-up, a
    # NOTIFY of its own. Values, boards and live pushes are the projector's (test_projector.py
    # pins a batch).
    statements = [q["sql"].split()[0].upper() for q in ctx.captured_queries]
    assert statements == ["BEGIN", "WITH", "COMMIT", "SELECT"], statements
    assert "pg_notify" in ctx.captured_queries[-1]["sql"]


def test_unknown_keys_of_a_match_or_a_result_are_ignored(server: SignedClient) -> None:
    """docs/api.md §4.1: not stored, not part of the body a repeat is compared by, never an error."""
    body = a_match()
    body["colour"] = "red"
    body["results"][0]["subscore"] = {"kills": 3}  # misspelt: dropped
    assert server.post(URL, body).status_code == 201
    again = server.post(URL, a_match())
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert list(Result.objects.values_list("subpart", "metadata")) == [(0, None)]


@pytest.mark.parametrize("together", [True, False], ids=["one batch", "two requests"])
def test_a_value_reached_twice_in_one_second_keeps_the_earlier_result(server: SignedClient, together) -> None:
    """docs/encoding.md, "Time resolution": the order counts whole seconds, but of a player's two
    results of the same value within one second the earlier holds the entry (its metadata and
    reached_at), whichever arrived first: here the later one arrives first, and its match_id
    sorts first too."""

    def match(match_id: str, at: str, replay: str) -> dict:
        result = {"player": "p42", "board": "rating", "score": 1450, "metadata": {"replay": replay}}
        return {"match_id": match_id, "ended_at": at, "results": [result]}

    later, earlier = match("A-later", "2026-11-29T18:59:58.500Z", "b"), match("z-earlier", "2026-11-29T18:59:58Z", "a")
    if together:
        answer = server.post(URL + "/batch", {"matches": [later, earlier]})
        assert answer.status_code == 200, answer.content
        assert [r["status"] for r in answer.json()["results"]] == ["accepted", "accepted"]
    else:
        assert server.post(URL, later).status_code == 201
        projected()
        assert server.post(URL, earlier).status_code == 201
    projected()
    response = Client().get("/api/v1/games/chess/boards/rating/top", {"window": "all"})
    assert [(e["player"], e["metadata"]) for e in response.json()["entries"]] == [("p42", {"replay": "a"})]
    reached = set(PlayerValue.objects.filter(board__slug="rating").values_list("reached_at", flat=True))
    assert reached == {datetime(2026, 11, 29, 18, 59, 58, tzinfo=UTC)}
