"""Hostile and malformed input (docs/reliability.md, "Hostile input"): every one is a 4xx with
the error body of docs/api.md §14, and nothing of it is stored. Ids are taken exactly (docs/api.md
§1.1): whitespace or control characters around or inside an id are a 400, never trimmed away."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.test import Client

from anticheat.models import AuditEntry
from scores.models import Friendship, Match, Player
from tests.boards.conftest import URL, submit
from tests.conftest import SignedClient
from tests.scores.test_ingest_api import assert_error


def body(match_id: str = "m-1", ended_at: str = "2026-11-28T12:00:00Z", **result: object) -> dict:
    return {
        "match_id": match_id,
        "ended_at": ended_at,
        "results": [{"player": "p1", "board": "rating", "score": 5, **result}],
    }


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# --- ids are exact ---------------------------------------------------------------------------


def test_a_match_id_with_spaces_around_it_is_refused_not_taken_for_another(server: SignedClient, game) -> None:
    assert server.post(f"{URL}/matches", body("ws-1")).status_code == 201
    for padded in (" ws-1 ", "ws-1 ", " ws-1", "ws-1\n", "\tws-1"):
        assert_error(server.post(f"{URL}/matches", body(padded)), 400, "invalid_body")
    assert list(Match.objects.values_list("match_id", flat=True)) == ["ws-1"]
    assert server.post(f"{URL}/matches", body("a match")).status_code == 201  # a space inside is printable ASCII


@pytest.mark.parametrize(
    "field, value",
    [
        ("player", "wsp "),
        ("player", "\tx\n"),
        ("player", "x\n"),
        ("player", "p\x00"),
        ("board", " rating"),
        ("board", "rating\n"),
        ("region", "eu "),
    ],
)
def test_ids_in_results_are_taken_exactly(server: SignedClient, game, field: str, value: str) -> None:
    assert_error(server.post(f"{URL}/matches", body(**{field: value})), 400, "invalid_body")
    batch = server.post(f"{URL}/matches/batch", {"matches": [body(**{field: value})]})
    assert batch.status_code == 200 and batch.json()["results"][0]["status"] == "rejected"
    assert not Match.objects.exists() and not Player.objects.exists()


def test_friend_ids_are_taken_exactly(server: SignedClient, game) -> None:
    for friends in (["p2 "], ["\tp2"], ["p2\n"]):
        assert_error(server.request("PUT", f"{URL}/players/p1/friends", {"friends": friends}), 400, "invalid_body")
    assert_error(server.request("PUT", f"{URL}/players/p1%0A/friends", {"friends": []}), 400, "invalid_player")
    assert not Friendship.objects.exists() and not Player.objects.exists()


@pytest.mark.parametrize("player", ["p1%20", "%20p1", "p1%0A", "p%00", "p%09x"])
def test_a_player_id_in_a_url_is_taken_exactly(server: SignedClient, game, player: str) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    assert_error(server.get(f"{URL}/boards/rating/players/{player}"), 400, "invalid_player")
    assert_error(server.get(f"{URL}/boards/rating/players/{player}/friends"), 400, "invalid_player")
    assert_error(server.post(f"{URL}/players/{player}/token"), 400, "invalid_player")
    assert Player.objects.count() == 1


def test_a_match_id_in_a_url_is_taken_exactly(server: SignedClient, game) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    assert_error(server.post(f"{URL}/matches/m%20/void", {"reason": "cheat"}), 400, "invalid_match_id")
    assert_error(server.post(f"{URL}/matches/m%00/approve", {}), 400, "invalid_match_id")
    assert Match.objects.get().status == "accepted"


# --- values of the schema's types (docs/api.md §15): what the schema forbids, the service refuses


@pytest.mark.parametrize("field, value", [("player", 123), ("board", 7), ("display_name", 5), ("region", 1)])
def test_a_number_is_neither_text_nor_an_id(server: SignedClient, game, field: str, value: int) -> None:
    assert_error(server.post(f"{URL}/matches", body(**{field: value})), 400, "invalid_body")
    batch = server.post(f"{URL}/matches/batch", {"matches": [body(**{field: value})]})
    assert batch.status_code == 200 and batch.json()["results"][0]["status"] == "rejected"
    friends = server.request("PUT", f"{URL}/players/p1/friends", {"friends": [123]})
    assert_error(friends, 400, "invalid_body")
    assert not Match.objects.exists() and not Player.objects.exists() and not Friendship.objects.exists()


def test_a_moderation_reason_is_text(server: SignedClient, game) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    assert_error(server.post(f"{URL}/matches/m/void", {"reason": 5}), 400, "invalid_body")
    assert_error(server.post(f"{URL}/matches/m/approve", {"reason": 5}), 400, "invalid_body")
    assert Match.objects.get().status == "accepted" and not AuditEntry.objects.exists()


@pytest.mark.parametrize("raw", [b"0", b"[]", b'""', b"false", b"null", b'"reason"'])
def test_an_approve_body_that_is_not_an_object_is_a_400(server: SignedClient, game, raw: bytes) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    assert_error(server.post(f"{URL}/matches/m/approve", raw=raw), 400, "invalid_body")
    assert not AuditEntry.objects.exists()
    # the body is optional: none at all, or an empty object, approves
    assert server.post(f"{URL}/matches/m/approve", raw=b"").json() == {"match_id": "m", "status": "accepted"}
    assert server.post(f"{URL}/matches/m/approve", {}).status_code == 200
    assert AuditEntry.objects.filter(action="approve").count() == 2


@pytest.mark.parametrize("number", ["5.0", "%2B5", "%205", "5%20", "1_0", "%D9%A3", "0x5", "5e0"])
def test_an_integer_query_parameter_is_ascii_digits(server: SignedClient, game, number: str) -> None:
    """DRF read "٣" (%D9%A3, an Arabic-Indic three), "+5" and "5.0" as numbers."""
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    assert_error(server.get(f"{URL}/boards/rating/top?limit={number}"), 400, "invalid_body")
    assert_error(server.get(f"{URL}/boards/rating/top?offset={number}"), 400, "invalid_body")
    assert_error(server.get(f"{URL}/boards/rating/players/p1?around={number}"), 400, "invalid_body")
    assert_error(server.get(f"{URL}/boards/rating/standings/daily:2026-11-28?limit={number}"), 400, "invalid_body")
    assert_error(server.get(f"{URL}/boards/rating/export?version={number}"), 400, "invalid_body")
    assert server.get(f"{URL}/boards/rating/top?limit=5&offset=0").status_code == 200
    assert server.get(f"{URL}/boards/rating/players/p1?around=5").json()["rank"] == 1


@pytest.mark.parametrize(
    "window",
    [
        "daily:%D9%A2%D9%A0%D9%A2%D9%A6-11-28",  # 2026 in Arabic-Indic digits
        "monthly:%EF%BC%92026-11",  # a fullwidth 2
        "weekly:2026-W%D9%A48",
        "daily:2026-11-28%0A",
        "%20all",
        "all%20",
    ],
)
def test_a_window_is_taken_exactly(server: SignedClient, game, window: str) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    assert_error(server.get(f"{URL}/boards/rating/top?window={window}"), 404, "unknown_window")
    assert_error(server.get(f"{URL}/boards/rating/players/p1?window={window}"), 404, "unknown_window")
    assert server.get(f"{URL}/boards/rating/top?window=daily:2026-11-28").json()["total"] == 1


def test_an_optional_query_parameter_sent_empty_is_as_if_not_sent(server: SignedClient, game) -> None:
    """As DRF reads a query (like a form); the schema says so (allowEmptyValue)."""
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    top = server.get(f"{URL}/boards/rating/top").json()
    assert server.get(f"{URL}/boards/rating/top?window=&limit=&offset=&cursor=&region=").json() == top
    player = server.get(f"{URL}/boards/rating/players/p1").json()
    assert server.get(f"{URL}/boards/rating/players/p1?window=&around=&region=").json() == player
    assert server.get(f"{URL}/tournaments?state=").json() == server.get(f"{URL}/tournaments").json()


# --- each of these was a 500 once ----------------------------------------------------------


def test_a_signature_timestamp_too_large_for_a_float_is_a_401(transactional_db) -> None:
    headers = {"X-Key-Id": "sk_x", "X-Signature": "t=" + "9" * 400 + ",v1=" + "a" * 64}
    assert_error(Client().post(f"{URL}/matches", b"{}", content_type="application/json", headers=headers), 401)


def test_a_signature_of_non_ascii_characters_is_a_401(server: SignedClient, game) -> None:
    raw = json.dumps(body()).encode()
    signature = server.request("POST", "/x", raw=b"").request["HTTP_X_SIGNATURE"].split(",")[0]  # a valid t=
    # WSGI hands header bytes over as latin-1: 64 bytes >= 0x80 are 64 non-ASCII characters
    headers = {"HTTP_X_KEY_ID": server.key_id, "HTTP_X_SIGNATURE": f"{signature},v1=" + "\xe9" * 64}
    response = Client().generic("POST", f"{URL}/matches", raw, content_type="application/json", **headers)
    assert_error(response, 401)
    assert not Match.objects.exists()


@pytest.mark.parametrize("header", ["sk_\x00x", "x" * 500, ""])
def test_an_odd_key_id_is_an_unknown_key(server: SignedClient, game, header: str) -> None:
    raw = json.dumps(body()).encode()
    signed = server.request("GET", "/x").request["HTTP_X_SIGNATURE"]
    response = Client().generic(
        "POST", f"{URL}/matches", raw, content_type="application/json", HTTP_X_KEY_ID=header, HTTP_X_SIGNATURE=signed
    )
    assert_error(response, 401)


@pytest.mark.parametrize("query", ["q=%00", "player=%00", "q=a%0Ab", "window=%00", "region=%00"])
def test_control_characters_in_a_board_page_query_are_a_400_page(server: SignedClient, game, query: str) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    response = Client().get(f"/games/chess/boards/rating/?{query}")
    assert response.status_code == 400 and b"control character" in response.content, response.status_code


@pytest.mark.parametrize(
    "path", ["/api/v1/games/%00/boards/rating/top", "/api/v1/games/chess/boards/%00/top", "/games/%00/"]
)
def test_a_nul_in_a_game_or_board_slug_is_a_404(server: SignedClient, game, path: str) -> None:
    assert Client().get(path).status_code == 404


@pytest.mark.parametrize(
    "ended_at",
    ["0001-01-01T00:00:00Z", "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59-01:00", "1969-12-31T23:59:59Z"],
)
def test_an_ended_at_out_of_any_window_is_a_400(server: SignedClient, game, ended_at: str) -> None:
    assert_error(server.post(f"{URL}/matches", body(ended_at=ended_at)), 400, "invalid_body")
    batch = server.post(f"{URL}/matches/batch", {"matches": [body(ended_at=ended_at)]})
    assert batch.status_code == 200 and batch.json()["results"][0]["status"] == "rejected"
    assert not Match.objects.exists()


def test_an_ended_at_far_ahead_is_refused_as_in_the_future(server: SignedClient, game) -> None:
    assert_error(server.post(f"{URL}/matches", body(ended_at="9998-12-31T23:59:59Z")), 400, "ended_at_in_future")


@pytest.mark.parametrize(
    "path, method",
    [
        ("/matches", "POST"),
        ("/matches/batch", "POST"),
        ("/players/p1/friends", "PUT"),
        ("/matches/m/void", "POST"),
        ("/matches/m/approve", "POST"),
    ],
)
@pytest.mark.parametrize("depth", [65, 900, 1000, 100_000])
def test_a_deeply_nested_body_is_a_400(server: SignedClient, game, path: str, method: str, depth: int) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    assert_error(server.request(method, URL + path, raw=nested(depth)), 400, "invalid_json")
    deep_object = b'{"a":' * depth + b"1" + b"}" * depth
    assert_error(server.request(method, URL + path, raw=deep_object), 400, "invalid_json")
    assert Match.objects.get().status == "accepted" and Match.objects.count() == 1


def test_metadata_nested_within_the_bound_is_still_fine(server: SignedClient, game) -> None:
    meta: dict = {}
    inner = meta
    for _ in range(50):
        inner["a"] = {}
        inner = inner["a"]
    assert server.post(f"{URL}/matches", body(metadata=meta)).status_code == 201


# a lone surrogate: an escape JSON's grammar allows that names no character (docs/api.md §14)
LONE = ["\\udb69", "\\udc00", "a\\ud800b"]
SURROGATE_BODIES = {
    "/matches": '{"match_id": "%s", "ended_at": "2026-11-28T12:00:00Z", '
    '"results": [{"player": "p2", "board": "rating", "score": 5}]}',
    "/matches/batch": '{"matches": [{"match_id": "m-2", "ended_at": "2026-11-28T12:00:00Z", '
    '"results": [{"player": "p2", "board": "rating", "score": 5, "metadata": {"%s": 1}}]}]}',
    "/players/p1/friends": '{"friends": ["%s"]}',
    "/matches/m/void": '{"reason": "%s"}',
    "/matches/m/approve": '{"reason": "%s"}',
}


@pytest.mark.parametrize("lone", LONE)
@pytest.mark.parametrize("path, method", [(p, "PUT" if "friends" in p else "POST") for p in SURROGATE_BODIES])
def test_a_lone_surrogate_in_a_body_is_a_400_and_changes_nothing(
    server: SignedClient, game, path: str, method: str, lone: str
) -> None:
    submit(server, "m", [{"player": "p1", "board": "rating", "score": 5}])
    raw = (SURROGATE_BODIES[path] % lone).encode()
    assert_error(server.request(method, URL + path, raw=raw), 400, "invalid_json")
    assert list(Match.objects.values_list("match_id", "status")) == [("m", "accepted")]
    assert not Friendship.objects.exists() and not AuditEntry.objects.exists()


def test_a_surrogate_pair_is_one_character_and_taken(server: SignedClient, game) -> None:
    raw = b'{"match_id": "m-\\ud83d\\ude00", "ended_at": "2026-11-28T12:00:00Z", '
    raw += b'"results": [{"player": "p1", "board": "rating", "score": 5, "metadata": {"k\\ud83d\\ude00": "\\u00e9"}}]}'
    assert server.post(f"{URL}/matches", raw=raw).status_code == 400  # an id is printable ASCII (docs/api.md §1.1)
    raw = raw.replace(b"m-\\ud83d\\ude00", b"m-1")
    assert server.post(f"{URL}/matches", raw=raw).status_code == 201
    assert Match.objects.get().match_id == "m-1"


@pytest.mark.parametrize("ended_at", ["2026-11-28T12:00:00-22:02", "2026-11-28T12:00:00+23:59"])
def test_an_ended_at_with_an_offset_beyond_postgres_16_hours_is_taken_as_its_instant(
    server: SignedClient, game, ended_at: str
) -> None:
    """RFC 3339 offsets go to ±23:59 (the schema's pattern too); Postgres takes ±15:59 at most."""
    assert server.post(f"{URL}/matches", body("off-1", ended_at=ended_at)).status_code == 201
    batch = server.post(f"{URL}/matches/batch", {"matches": [body("off-2", ended_at=ended_at)]})
    assert batch.status_code == 200 and batch.json()["results"][0]["status"] == "accepted", batch.json()
    instant = datetime.fromisoformat(ended_at)
    assert [m.ended_at for m in Match.objects.order_by("match_id")] == [instant, instant]
    assert server.post(f"{URL}/matches", body("off-1", ended_at=ended_at)).json()["duplicate"] is True


def test_invented_game_slugs_never_grow_the_config_cache_past_its_cap(game, monkeypatch) -> None:
    """Every slug of no game is remembered as a 404, and anyone can invent slugs: past the cap the
    remembered misses are forgotten, and the games are kept (docs/reliability.md, "Hostile input")."""
    from scores.selectors import config

    monkeypatch.setattr(config, "_ENTRIES_KEPT", 8)
    config.config_cache_clear()
    assert config.cached_game_config("chess") is not None
    for n in range(50):
        assert Client().get(f"/api/v1/games/nope-{n}/boards/rating/top").status_code == 404
        assert len(config._config_cache) <= 8
    assert "chess" in config._config_cache
