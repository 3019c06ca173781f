"""The edge cache in front of Django (scripts/web.py, docs/reads.md "The edge cache"), through
the real nginx and granian of `make run`'s web stack: public, signed-out top and histogram
answers are served from nginx for at most the second docs/api.md §5.2 allows; nothing
authenticated, no player or friends read, no error and no degraded answer is ever kept.

Django's side is counted where Django counts it: the request counter of /metrics, per route
(every worker's, summed). Submissions are applied by the projector process beside the test
(tests/projector.py), as everywhere in the suite."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message

import pytest
from leaderboard_client.signing import sign

from rediskit import keys
from rediskit.client import get_redis
from tests.boards.conftest import URL, submit
from tests.boards.test_redis_down import ThrowawayRedis
from tests.conftest import SignedClient, mark_index_built
from tests.polling import until
from tests.test_web import _get, nginx_needed, serving

TOP = f"{URL}/boards/rating/top"
HISTOGRAM = f"{URL}/boards/rating/histogram"
PLAYER = f"{URL}/boards/rating/players/p1"
FRIENDS = f"{URL}/boards/rating/players/p1/friends"
ROUTES = {
    "top": "api/v1/games/<str:game>/boards/<str:board>/top",
    "histogram": "api/v1/games/<str:game>/boards/<str:board>/histogram",
    "player": "api/v1/games/<str:game>/boards/<str:board>/players/<str:player>",
    "friends": "api/v1/games/<str:game>/boards/<str:board>/players/<str:player>/friends",
}


@pytest.fixture
def edge(ranked: SignedClient) -> Iterator[int]:
    """The nginx topology on a free port, over the ranked test board."""
    nginx_needed()
    with serving("nginx", "granian") as port:
        yield port


def reached_django(port: int, route: str) -> int:
    """How many requests of a route Django answered, any status (from /metrics)."""
    _, _, body = _get(f"http://127.0.0.1:{port}/metrics")
    pattern = re.compile(
        r'^leaderboard_http_requests_total\{[^}]*route="' + re.escape(ROUTES[route]) + r'"[^}]*\} ([0-9.e+]+)$',
        re.MULTILINE,
    )
    return int(sum(float(v) for v in pattern.findall(body.decode())))


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, Message, bytes]:
    """status, headers (looked up whatever their case: granian sends them in lower case), body."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def signed_headers(server: SignedClient, path: str) -> dict[str, str]:
    return {"X-Key-Id": server.key_id, "X-Signature": sign(server.secret, "GET", path.split("?")[0], b"")}


def token_headers(server: SignedClient, player: str = "p1") -> dict[str, str]:
    response = server.post(f"{URL}/players/{player}/token")
    assert response.status_code == 200, response.content  # docs/api.md §3.2
    return {"Authorization": f"Bearer {response.json()['token']}"}


def within_one_second(reads, start_by: float = 0.5):
    """Runs *reads* (a callable) until they all start and end inside one wall-clock second (the
    edge keeps an answer until the end of the second its page was computed in), at most 5 times;
    returns what the last run returned. Each run starts in the first *start_by* of a second."""
    for attempt in range(5):
        while time.time() % 1 > start_by:
            time.sleep(0.005)
        started = time.time()
        result = reads(attempt)
        if int(time.time()) == int(started):
            return result
    pytest.fail("five runs of the reads each straddled a second boundary")


def test_two_signed_out_top_reads_within_a_second_reach_django_once(edge: int) -> None:
    def reads(attempt: int) -> tuple[int, list[tuple[int, str | None, bytes]]]:
        path = f"{TOP}?limit={attempt + 3}"  # a key no earlier attempt stored
        before = reached_django(edge, "top")
        answers = [get(edge, path) for _ in range(2)]
        return reached_django(edge, "top") - before, [(s, h.get("X-Cache-Status"), b) for s, h, b in answers]

    django, answers = within_one_second(reads)
    assert django == 1
    assert [(status, cache) for status, cache, _ in answers] == [(200, "MISS"), (200, "HIT")]
    assert answers[0][2] == answers[1][2]  # the same body, byte for byte
    _, headers, _ = get(edge, TOP)
    assert headers["Cache-Control"] == "public, max-age=1"  # docs/api.md §5.2's, passed on
    assert "X-Accel-Expires" not in headers  # nginx's instruction stays between nginx and Django


def test_the_histogram_is_kept_for_its_max_age(edge: int) -> None:
    before = reached_django(edge, "histogram")
    answers = [get(edge, f"{HISTOGRAM}?window=all") for _ in range(3)]
    assert [(s, h.get("X-Cache-Status")) for s, h, _ in answers] == [(200, "MISS"), (200, "HIT"), (200, "HIT")]
    assert answers[0][1]["Cache-Control"] == "public, max-age=60"
    assert reached_django(edge, "histogram") - before == 1


def test_concurrent_reads_of_a_cold_key_reach_django_once(edge: int) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def reads(attempt: int) -> tuple[int, list[str | None]]:
        path = f"{TOP}?limit={attempt + 20}"
        before = reached_django(edge, "top")
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: get(edge, path), range(8)))
        assert all(status == 200 for status, _, _ in answers)
        return reached_django(edge, "top") - before, [h.get("X-Cache-Status") for _, h, _ in answers]

    # the waiting requests look at nginx's lock every 500 ms: start at the top of a second
    django, statuses = within_one_second(reads, start_by=0.05)
    assert django == 1, statuses
    assert statuses.count("MISS") == 1


def test_authenticated_player_friends_and_error_reads_are_never_cached(edge: int, ranked: SignedClient) -> None:
    token = token_headers(ranked)
    cases = [
        ("top", TOP, signed_headers(ranked, TOP)),
        ("top", TOP, token),
        ("top", TOP, {"Cookie": "sessionid=anything"}),
        ("top", f"{TOP}?token=anything", {}),
        ("player", PLAYER, token),
        ("player", PLAYER, signed_headers(ranked, PLAYER)),
        ("friends", FRIENDS, token),
        ("top", f"{URL}/boards/no-such-board/top", {}),  # 404
        ("top", f"{TOP}?limit=1000", {}),  # 400
        ("histogram", f"{URL}/boards/no-such-board/histogram", {}),
    ]
    for route, path, headers in cases:
        before = reached_django(edge, route)
        answers = [get(edge, path, headers) for _ in range(3)]
        assert reached_django(edge, route) - before == 3, (path, headers)
        for status, got, _ in answers:
            assert got.get("X-Cache-Status") in (None, "BYPASS", "MISS"), (path, headers, got)
            if route in ("player", "friends"):
                assert status == 200 and "X-Cache-Status" not in got  # not even looked up
    # an authenticated read stored nothing a signed-out read could get: the first is a MISS
    status, headers, _ = get(edge, f"{TOP}?limit=11", token)
    assert (status, headers.get("X-Cache-Status")) == (200, "BYPASS")
    assert get(edge, f"{TOP}?limit=11")[1].get("X-Cache-Status") == "MISS"


def test_a_result_is_visible_through_the_edge_within_one_second(edge: int, ranked: SignedClient) -> None:
    """The edge keeps a page no longer than Django's own second: a read that starts a second
    after the result was accepted sees it, even right after the page was stored. The second
    counts from the 2xx, not from the projector's apply (docs/api.md §4.4): it covers both."""
    stored = None
    deadline = time.monotonic() + 5
    while stored is None:  # a page just stored by this read: the edge's copy as fresh as can be
        _, headers, body = get(edge, TOP)
        if headers.get("X-Cache-Status") in ("MISS", "EXPIRED"):
            stored = body
        assert time.monotonic() < deadline, "the edge never refreshed the page"
    assert b'"p9"' not in stored
    submit(
        ranked.at_the_answer(), "m-edge", [{"player": "p9", "board": "rating", "score": 900}], at="2026-11-28T13:00:00Z"
    )
    accepted = time.time()
    seen = []
    while time.time() < accepted + 1.0:  # what the edge answers meanwhile: old or new, both allowed
        seen.append(get(edge, TOP)[1].get("X-Cache-Status"))
    status, headers, body = get(edge, TOP)
    assert status == 200 and b'"p9"' in body, (headers.get("X-Cache-Status"), seen)
    assert "HIT" in seen or "UPDATING" in seen or "EXPIRED" in seen  # the reads went through the cache


def test_edge_cache_0_passes_every_read_through(ranked: SignedClient) -> None:
    nginx_needed()
    with serving("nginx", "granian", EDGE_CACHE="0") as port:
        before = reached_django(port, "top")
        answers = [get(port, TOP) for _ in range(3)]
        assert reached_django(port, "top") - before == 3
        assert all(status == 200 and "X-Cache-Status" not in headers for status, headers, _ in answers)


def test_cors_answers_come_through_the_cache_and_preflights_reach_django(edge: int) -> None:
    """A cached top answer carries Django's CORS headers to any origin (docs/clients.md), and
    a preflight is answered by Django every time."""
    path = f"{TOP}?limit=9"
    answers = [get(edge, path, {"Origin": f"https://page{i}.example"}) for i in range(2)]
    assert [h.get("X-Cache-Status") for _, h, _ in answers] == ["MISS", "HIT"]
    assert all(h.get("Access-Control-Allow-Origin") == "*" for _, h, _ in answers)
    preflight = {"Origin": "https://page.example", "Access-Control-Request-Method": "GET"}
    for _ in range(2):
        request = urllib.request.Request(f"http://127.0.0.1:{edge}{path}", headers=preflight, method="OPTIONS")
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 204 and response.headers.get("X-Cache-Status") is None
            assert response.headers.get("Access-Control-Allow-Methods") == "GET, HEAD, OPTIONS"


def test_a_degraded_answer_is_not_kept_at_the_edge(edge: int) -> None:
    """docs/reads.md "The edge cache" (docs/api.md §5.8): degraded answers say
    `X-Accel-Expires: 0` and are never kept. While the index is not built (its marker missing, as
    after a Redis restart, docs/reliability.md) a top read is answered from Postgres, degraded;
    the same read right after the index is back, within the same second (when a kept answer
    would still be served), reaches Django and is not degraded."""

    def reads(attempt: int) -> tuple[int, list[tuple[int, str | None, dict]]]:
        path = f"{TOP}?limit={attempt + 30}"  # a key no earlier attempt stored
        before = reached_django(edge, "top")
        get_redis().delete(keys.BUILT_MARKER)
        try:
            degraded = get(edge, path)
        finally:
            mark_index_built()
        recovered = get(edge, path)
        answers = [(s, h.get("X-Cache-Status"), json.loads(b)) for s, h, b in (degraded, recovered)]
        return reached_django(edge, "top") - before, answers

    django, [(status, cache, degraded), (status_after, cache_after, recovered)] = within_one_second(reads)
    assert (status, degraded["degraded"], degraded["total"]) == (200, True, 5)
    assert (status_after, "degraded" in recovered, recovered["total"]) == (200, False, 5)
    assert (cache, cache_after) == ("MISS", "MISS")  # nothing kept: the second read was not a HIT
    assert django == 2


def test_a_degraded_histogram_while_redis_is_down_is_not_kept_at_the_edge(ranked: SignedClient, tmp_path) -> None:
    """docs/reads.md "The edge cache" and "Histograms" (docs/api.md §5.8): with Redis
    unreachable the histogram is answered empty and degraded, and a degraded answer is never
    kept at the edge. The web stack runs on a Redis of its own, stopped during a read and started
    again: the same read right after, within the same second (when a kept answer would still be
    served), reaches Django; the histogram comes back undegraded."""
    nginx_needed()
    redis = ThrowawayRedis(tmp_path)
    redis.start()
    try:
        with serving("nginx", "granian", REDIS_URL=redis.url) as port:

            def reads(attempt: int) -> tuple[str, int, list[tuple[int, Message, dict]]]:
                path = f"{HISTOGRAM}?window=daily:2026-11-2{attempt}"  # a key no earlier attempt stored
                before = reached_django(port, "histogram")
                redis.stop()
                try:
                    down = get(port, path)
                finally:
                    redis.start()
                after = get(port, path)
                answers = [(s, h, json.loads(b)) for s, h, b in (down, after)]
                return path, reached_django(port, "histogram") - before, answers

            path, django, [(status, headers, body), (status_after, headers_after, _)] = within_one_second(
                reads, start_by=0.3
            )
            assert (status, body["degraded"], body["total"]) == (200, True, 0)
            assert headers["Cache-Control"] == "public, max-age=1" and headers["X-Cache-Status"] == "MISS"
            assert (status_after, headers_after["X-Cache-Status"]) == (200, "MISS")  # not the kept degraded one
            assert django == 2
            until(  # the breaker may hold Redis off a moment longer (rediskit/breaker.py)
                lambda: "degraded" not in json.loads(get(port, path)[2]),
                "an undegraded histogram once Redis is back",
                timeout=10,
            )
    finally:
        if redis.proc is not None and redis.proc.poll() is None:
            redis.stop()
