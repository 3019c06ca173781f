"""Limits per client address on public reads and websocket handshakes (docs/api.md §15,
docs/reads.md "Rate limits"): Django's (leaderboard_project/limits.py, boards/routing.py) on its
own, then through the real nginx stack `make run` starts (scripts/web.py), where nginx limits
the reads its edge cache answers too.

Clients are told apart as tests/test_proxy_chain.py does: a balancer on 127.0.0.3, declared in
TRUSTED_PROXIES, forwarding each client's address in X-Forwarded-For."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from leaderboard_project.limits import PUBLIC_READ_PATH, AddressLimits
from scripts import web
from tests.boards.conftest import URL
from tests.conftest import SignedClient
from tests.test_proxy_chain import BALANCER, UNTRUSTED_PEER, Browser
from tests.test_web import nginx_needed, serving

TOP = f"{URL}/boards/rating/top"


def assert_rate_limited(status: int, headers: dict[str, str], body: bytes, *, at_most: int) -> None:
    assert status == 429, body[:300]
    assert json.loads(body)["error"]["code"] == "rate_limited"
    assert 1 <= int(headers["retry-after"]) <= at_most


@pytest.fixture
def pinned(monkeypatch, settings) -> None:
    """Django's limits at 3 reads and 2 handshakes a minute, on a clock pinned mid-minute."""
    settings.THROTTLE_PUBLIC_READS = "3/min"
    settings.THROTTLE_WEBSOCKETS = "2/min"
    now = (time.time() // 60) * 60 + 30
    monkeypatch.setattr(AddressLimits, "clock", staticmethod(lambda: now))


def test_public_reads_are_limited_per_client_address_in_django(ranked: SignedClient, pinned) -> None:
    reader = Client(REMOTE_ADDR="192.0.2.10")
    assert reader.get(TOP).status_code == 200
    assert reader.get(URL).status_code == 200  # the game's description
    assert reader.get("/").status_code == 200  # a page
    for path in (TOP, f"{URL}/boards/rating/histogram", f"{URL}/boards/rating/standings/all", "/api/v1/games"):
        answer = reader.get(path)
        assert_rate_limited(answer.status_code, {"retry-after": answer["Retry-After"]}, answer.content, at_most=30)
    page = reader.get("/games/chess/boards/rating/")
    assert page.status_code == 429 and page["Content-Type"].startswith("text/html") and page["Retry-After"] == "30"
    # another address reads on; submissions from the limited one are no public reads
    assert Client(REMOTE_ADDR="192.0.2.11").get(TOP).status_code == 200
    submitted = ranked.post(
        f"{URL}/matches",
        {
            "match_id": "m-late",
            "ended_at": "2026-11-28T12:00:00Z",
            "results": [{"player": "p9", "board": "rating", "score": 1}],
        },
        REMOTE_ADDR="192.0.2.10",
    )
    assert submitted.status_code in (200, 201, 202), submitted.content


def test_the_default_public_read_limit_is_the_same_for_nginx_and_django() -> None:
    """docs/api.md §15: 1200 public reads a minute per address, both sides reading one default."""
    from leaderboard_project import settings as project_settings

    source = Path(project_settings.__file__).read_text()
    assert f'os.environ.get("THROTTLE_PUBLIC_READS", "{web.DEFAULT_PUBLIC_READS}")' in source
    assert web.DEFAULT_PUBLIC_READS == "1200/min"
    assert 'os.environ.get("THROTTLE_WEBSOCKETS", "120/min")' in source


@pytest.fixture
def limited_stack(ranked: SignedClient) -> Iterator[int]:
    """make run's web stack with 4 public reads and 2 websocket handshakes a minute per address."""
    nginx_needed()
    with serving(
        "nginx", "granian", TRUSTED_PROXIES=BALANCER, THROTTLE_PUBLIC_READS="4/min", THROTTLE_WEBSOCKETS="2/min"
    ) as port:
        yield port


def test_cached_top_reads_are_limited_per_address_through_nginx(limited_stack: int) -> None:
    port = limited_stack
    x = Browser(port, BALANCER, forwarded="198.51.100.10")
    answers = [x.request("GET", f"{TOP}?limit=3") for _ in range(5)]
    assert [status for status, _, _ in answers] == [200, 200, 200, 200, 429]
    # the answers before the refusal came from the edge cache (one miss, then hits): nginx
    # counted them, Django never saw them
    assert "HIT" in [headers.get("x-cache-status") for _, headers, _ in answers[1:4]]
    assert_rate_limited(*answers[4], at_most=15)  # nginx: one read more every 60/4 s
    assert answers[4][1]["retry-after"] == "15" and answers[4][1]["content-type"] == "application/json"
    # another client behind the balancer, and a peer that is no trusted proxy forging x's address
    assert Browser(port, BALANCER, forwarded="198.51.100.20").request("GET", f"{TOP}?limit=3")[0] == 200
    assert Browser(port, UNTRUSTED_PEER, forwarded="198.51.100.10").request("GET", f"{TOP}?limit=3")[0] == 200


def _handshake(port: int, forwarded: str) -> int:
    """The HTTP status of a websocket handshake from a client behind the balancer (101: opened)."""
    try:
        with connect(
            f"ws://127.0.0.1:{port}/ws/no/such/socket",
            open_timeout=10,
            additional_headers={"X-Forwarded-For": forwarded},
            source_address=(BALANCER, 0),
        ) as ws:
            return ws.response.status_code
    except InvalidStatus as refused:
        response = refused.response
        if response.status_code == 429:
            assert json.loads(response.body)["error"]["code"] == "rate_limited"
            assert 1 <= int(response.headers["Retry-After"]) <= 60
        return response.status_code


def test_websocket_handshakes_over_the_limit_are_refused_429_through_nginx(limited_stack: int) -> None:
    port = limited_stack
    for round_ in range(2):  # a round that straddles Django's minute window is run again, once
        started = time.time() // 60
        x, y = f"198.51.100.{30 + round_}", f"198.51.100.{40 + round_}"
        seen = [_handshake(port, x) for _ in range(3)], _handshake(port, y)
        if time.time() // 60 == started:
            break
    assert seen == ([101, 101, 429], 101)


def test_the_schema_lists_the_429_on_every_public_read_the_limit_counts() -> None:
    """Every GET operation whose path the per-address limit counts (limits.PUBLIC_READ_PATH)
    lists the 429 a client must expect, with the error body."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    counted = {
        path: ops["get"]
        for path, ops in schema["paths"].items()
        if "get" in ops and PUBLIC_READ_PATH.match(re.sub(r"\{[^}]+\}", "x", path))
    }
    assert len(counted) >= 5, sorted(counted)  # games, a game, top, histogram, standings
    missing = [path for path, op in counted.items() if "429" not in op["responses"]]
    assert missing == []
    assert all(
        op["responses"]["429"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
        for op in counted.values()
    )
