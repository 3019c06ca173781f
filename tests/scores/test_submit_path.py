"""One implementation per submission endpoint (docs/architecture.md, "One implementation per
hot endpoint"): every POST to `.../matches` and `.../matches/batch` is answered by the view's
own `post` (scores/api/matches.py), never by DRF's request machinery, and each kind of request a
game server can send gets from it the answer docs/api.md §4 and §14 give."""

from __future__ import annotations

import json

from django.utils import timezone
from leaderboard_client.signing import sign

from scores.models import Match
from tests.conftest import SignedClient
from tests.factories import GameFactory, server_key

URL = "/api/v1/games/chess/matches"
BATCH = URL + "/batch"
GOOD = {
    "match_id": "m1",
    "ended_at": "2026-11-29T18:59:58Z",
    "results": [{"player": "p1", "board": "rating", "score": 3}],
}


def _raw(server: SignedClient, path: str, raw: bytes, content_type: str = "application/json", **headers: str):
    signed = {"X-Key-Id": server.key_id, "X-Signature": sign(server.secret, "POST", path, raw), **headers}
    return server.client.generic("POST", path, data=raw, content_type=content_type, headers=signed)


def _error(response) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"]
    assert response["Content-Type"] == "application/json" and response["Allow"] == "POST, OPTIONS"
    return response.status_code, body["error"]["code"]


def test_every_kind_of_submission_is_answered_by_the_one_path(server: SignedClient, game, drf_entries) -> None:
    first = server.post(URL, GOOD)
    assert first.status_code == 201 and first.json() == {"match_id": "m1", "status": "accepted", "duplicate": False}
    assert server.post(URL, GOOD).json()["duplicate"] is True
    assert _error(server.post(URL, {**GOOD, "results": [{"player": "p1", "board": "rating", "score": 4}]})) == (
        409,
        "match_conflict",
    )
    assert _error(server.post(URL, {**GOOD, "match_id": " m2"})) == (400, "invalid_body")
    assert _error(
        server.post(URL, {**GOOD, "match_id": "m3", "results": [{"player": "p", "board": "nope", "score": 1}]})
    ) == (
        400,
        "unknown_board",
    )
    # an integer past 64 bits is still an integer: refused by the board's bounds, not as "not one"
    huge = json.dumps({**GOOD, "match_id": "m4"}).replace('"score": 3', '"score": ' + "9" * 30).encode()
    assert _error(_raw(server, URL, huge)) == (400, "score_out_of_bounds")
    for raw in (b"", b"{", b'{"match_id": NaN}', b'{"a": ' * 70 + b"1" + b"}" * 70, b'{"match_id": "\\ud800"}'):
        assert _error(_raw(server, URL, raw)) == (400, "invalid_json"), raw
    assert _error(_raw(server, URL, b"[1]")) == (400, "invalid_body")
    assert _error(_raw(server, URL, json.dumps(GOOD).encode(), content_type="text/plain")) == (
        415,
        "unsupported_media_type",
    )
    assert _error(_raw(server, URL, json.dumps(GOOD).encode(), Accept="text/html")) == (406, "not_acceptable")
    # another charset, declared: read in it
    utf16 = json.dumps({**GOOD, "match_id": "m5"}).encode("utf-16")
    assert _raw(server, URL, utf16, content_type="application/json; charset=utf-16").status_code == 201

    unsigned = server.client.post(URL, data=json.dumps(GOOD), content_type="application/json")
    assert _error(unsigned) == (401, "not_authenticated")
    assert unsigned["WWW-Authenticate"] == 'HMAC-SHA256 realm="leaderboard"'
    wrong = SignedClient(server.key_id, "not-the-secret")
    assert _error(wrong.post(URL, GOOD)) == (401, "authentication_failed")
    other_key, other_secret = server_key(GameFactory(slug="other"), scopes=("submit",))
    assert _error(SignedClient(other_key.key_id, other_secret).post(URL, GOOD)) == (403, "forbidden")
    reader_key, reader_secret = server_key(game, scopes=("moderate",))
    assert _error(SignedClient(reader_key.key_id, reader_secret).post(URL, GOOD)) == (403, "forbidden")
    revoked_key, revoked_secret = server_key(game, scopes=("submit",))
    revoked_key.revoked_at = timezone.now()
    revoked_key.save()
    assert _error(SignedClient(revoked_key.key_id, revoked_secret).post(URL, GOOD)) == (403, "forbidden")

    batch = server.post(BATCH, {"matches": [{**GOOD, "match_id": "b1"}, {"match_id": "b2"}, GOOD]})
    assert batch.status_code == 200
    assert [(r["match_id"], r["status"], r["duplicate"]) for r in batch.json()["results"]] == [
        ("b1", "accepted", False),
        ("b2", "rejected", False),
        ("m1", "accepted", True),
    ]
    assert batch.json()["results"][1]["error"]["code"] == "invalid_body"
    assert _error(server.post(BATCH, {"matches": []})) == (400, "invalid_body")
    assert _error(server.post(BATCH, [GOOD])) == (400, "invalid_body")

    assert drf_entries == []  # not one of them reached DRF's machinery
    assert set(Match.objects.values_list("match_id", flat=True)) == {"m1", "m5", "b1"}

    # what DRF still serves on these routes: the other methods (and so the observation works)
    assert _error(server.client.options(URL)) == (401, "not_authenticated")
    assert _error(server.get(URL)) == (405, "method_not_allowed")
    assert drf_entries == ["OPTIONS", "GET"]
