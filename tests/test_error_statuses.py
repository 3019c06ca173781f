"""The 405, 406 and 415 of docs/api.md §14: the one error body {"error": {"code", "message"}},
as JSON, on the routes users call, and nothing changed by the refused request."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from leaderboard_client.signing import sign

from scores.models import Match
from tests.conftest import SignedClient
from tests.factories import server_key

URL = "/api/v1/games/chess"
MATCH = {
    "match_id": "m1",
    "ended_at": "2026-11-28T12:00:00Z",
    "results": [{"player": "p1", "board": "rating", "score": 5}],
}


@pytest.fixture
def server(game) -> SignedClient:
    key, secret = server_key(game, scopes=("submit", "moderate"))
    return SignedClient(key.key_id, secret)


def refused(response, status: int, code: str, message: str) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {"error": {"code": code, "message": message}}


@pytest.mark.parametrize(
    ("signed", "method", "path", "allow"),
    [
        (True, "DELETE", URL + "/matches", "POST, OPTIONS"),
        (True, "GET", URL + "/matches/batch", "POST, OPTIONS"),
        (True, "POST", URL + "/boards/rating/players/p1", "GET, HEAD, OPTIONS"),
        (False, "POST", URL + "/boards/rating/top", "GET, HEAD, OPTIONS"),
        (False, "PUT", "/api/v1/games", "GET, HEAD, OPTIONS"),
        (False, "POST", "/healthz", "GET, HEAD"),
        (False, "DELETE", "/metrics", "GET, HEAD"),
        (False, "POST", "/api/schema/", "GET, HEAD, OPTIONS"),
    ],
)
def test_a_method_the_route_does_not_serve_is_a_405(
    server: SignedClient, signed: bool, method: str, path: str, allow: str
) -> None:
    body = json.dumps(MATCH).encode()
    if signed:
        response = server.request(method, path, raw=body)
    else:
        client = Client(enforce_csrf_checks=True)  # as a caller without a session's CSRF token
        response = client.generic(method, path, data=body, content_type="application/json")
    refused(response, 405, "method_not_allowed", f'Method "{method}" not allowed.')
    assert response["Allow"] == allow
    assert not Match.objects.exists()


def test_the_routes_with_a_405_of_their_own_still_answer_their_reads(game) -> None:
    assert Client().get("/healthz").status_code == 200
    assert Client().head("/healthz").status_code == 200
    assert Client().get("/metrics").status_code == 200
    schema = Client().get("/api/schema/")
    assert schema.status_code == 200 and schema["Content-Type"].startswith("application/vnd.oai.openapi")
    assert Client().get("/api/schema/?format=json").json()["openapi"].startswith("3.")


def test_an_accept_the_route_cannot_answer_is_a_406(server: SignedClient) -> None:
    message = "Could not satisfy the request Accept header."
    refused(Client().get(URL, HTTP_ACCEPT="text/html"), 406, "not_acceptable", message)
    refused(Client().get("/api/schema/", HTTP_ACCEPT="text/html"), 406, "not_acceptable", message)
    refused(server.post(URL + "/matches", MATCH, Accept="text/html"), 406, "not_acceptable", message)
    refused(
        server.post(URL + "/matches/batch", {"matches": [MATCH]}, Accept="application/xml"),
        406,
        "not_acceptable",
        message,
    )
    assert not Match.objects.exists()
    # JSON among what the client takes: answered
    assert Client().get(URL, HTTP_ACCEPT="text/html, application/json;q=0.5").status_code == 200
    assert server.post(URL + "/matches", MATCH, Accept="text/html, */*;q=0.1").status_code == 201


def test_the_board_reads_answer_json_whatever_the_accept(server: SignedClient) -> None:
    """docs/reads.md, "Caching": the hot reads (top, a player's reads) negotiate no Accept."""
    assert server.post(URL + "/matches", MATCH).status_code == 201
    top = Client().get(URL + "/boards/rating/top", HTTP_ACCEPT="text/html")
    assert top.status_code == 200 and top["Content-Type"] == "application/json"
    assert [e["player"] for e in top.json()["entries"]] == ["p1"]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]
)
@pytest.mark.parametrize("path", [URL + "/matches", URL + "/matches/batch"])
def test_a_body_that_is_not_json_is_a_415(server: SignedClient, content_type: str, path: str) -> None:
    body = json.dumps(MATCH if path.endswith("/matches") else {"matches": [MATCH]}).encode()
    headers = {"X-Key-Id": server.key_id, "X-Signature": sign(server.secret, "POST", path, body)}
    response = Client().generic("POST", path, data=body, content_type=content_type, headers=headers)
    message = f'Unsupported media type "{content_type}" in request.'
    refused(response, 415, "unsupported_media_type", message)
    assert not Match.objects.exists()
