"""The thin request for single submissions (scores/api/matches.py): a plainly valid signed JSON
submission is answered without DRF's request and renderer, every other one the DRF way, and
the two give the same answer: status, body bytes and headers, for accepted, held, duplicate,
conflict and every kind of 400 (docs/api.md §4)."""

from __future__ import annotations

import json
from typing import Any

from django.test import RequestFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leaderboard_client.signing import sign

from scores.api.matches import _thin_match
from tests.conftest import SignedClient, reset_results
from tests.factories import BoardFactory, GameFactory, server_key
from tests.properties import examples

# DRF negotiates this Accept to its JSON renderer; the thin path leaves it to DRF
DRF_ACCEPT = "application/json, */*"
HEADERS = ("Content-Type", "Allow", "Retry-After", "WWW-Authenticate")


def _games() -> tuple[SignedClient, SignedClient]:
    """Two games alike, one answered by each path (a submission's answer never names its game)."""
    clients = []
    for slug in ("thin", "drf"):
        g = GameFactory(slug=slug)
        BoardFactory(game=g, slug="rating")
        BoardFactory(game=g, slug="points", mode="total", max_score=1000)
        key, secret = server_key(g, scopes=("submit",))
        clients.append(SignedClient(key.key_id, secret))
    return clients[0], clients[1]


RESULT = st.fixed_dictionaries(
    {
        "player": st.sampled_from(["p1", "p2", "p3 ", ""]),
        "board": st.sampled_from(["rating", "points", "nope"]),
        "score": st.one_of(st.integers(min_value=-5, max_value=1200), st.sampled_from(["12", 1.5, None])),
    },
    optional={"display_name": st.sampled_from(["Bo", " Bo", ""]), "region": st.sampled_from(["eu"])},
)
MATCH = st.fixed_dictionaries(
    {
        "match_id": st.sampled_from(["m1", "m2", "m3", "m 4"]),
        "ended_at": st.sampled_from(["2026-11-29T18:59:58Z", "2026-11-29T18:59:58", "2099-01-01T00:00:00Z", "x"]),
        "results": st.lists(RESULT, min_size=0, max_size=3),
    }
)
BODY = st.one_of(MATCH, MATCH, MATCH, st.sampled_from([[], "x", 12, {"match_id": "m1"}]))


def _answer(response) -> tuple[int, bytes, dict[str, str | None]]:
    return response.status_code, response.content, {h: response.get(h) for h in HEADERS}


@given(bodies=st.lists(BODY, min_size=1, max_size=8))
@settings(max_examples=examples(loop=15, deep=30), deadline=None, suppress_health_check=list(HealthCheck))
def test_the_thin_path_answers_exactly_as_drf(transactional_db, bodies: list[Any]) -> None:
    reset_results()
    from scores.models import Game

    Game.objects.all().delete()
    thin, drf = _games()
    for body in bodies:
        got = _answer(thin.post("/api/v1/games/thin/matches", body))
        want = _answer(drf.post("/api/v1/games/drf/matches", body, Accept=DRF_ACCEPT))
        assert got == want, body


def test_odd_bytes_and_headers_answer_alike(server: SignedClient, game) -> None:
    url = "/api/v1/games/chess/matches"
    for raw in (
        b"",
        b"{",
        b'{"match_id": NaN}',
        b"[1]",
        b'{"a": ' * 70 + b"1" + b"}" * 70,
        "\ud800".encode("utf-8", "surrogatepass"),
    ):
        got = _answer(server.request("POST", url, raw=raw))
        want = _answer(server.request("POST", url, raw=raw, Accept=DRF_ACCEPT))
        assert got == want, raw
    unsigned = server.client.post(url, data=b"{}", content_type="application/json")
    assert unsigned.status_code == 401


def _request(body: dict, secret: str, key_id: str, **extra: str):
    raw = json.dumps(body).encode()
    path = "/api/v1/games/chess/matches"
    headers = {"HTTP_X_KEY_ID": key_id, "HTTP_X_SIGNATURE": sign(secret, "POST", path, raw), **extra}
    return RequestFactory().post(path, data=raw, content_type="application/json", **headers)


def test_a_plain_signed_submission_takes_the_thin_path(server: SignedClient, game) -> None:
    body = {
        "match_id": "m1",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": "p1", "board": "rating", "score": 3}],
    }
    assert _thin_match(_request(body, server.secret, server.key_id), "chess") is not None
    # what the thin path leaves to DRF
    assert _thin_match(_request(body, server.secret, server.key_id, HTTP_ACCEPT=DRF_ACCEPT), "chess") is None
    assert _thin_match(_request(body, "wrong", server.key_id), "chess") is None
    assert _thin_match(_request(body, server.secret, server.key_id), "other-game") is None
    assert _thin_match(_request({**body, "ended_at": "2026-11-29"}, server.secret, server.key_id), "chess") is None
