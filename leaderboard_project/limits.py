"""Limits per client address on public reads and websocket handshakes (docs/api.md §15,
docs/reads.md "Rate limits").

Public reads (top, histogram, standings, game descriptions, the player web pages) count
against `THROTTLE_PUBLIC_READS` per client address; websocket handshakes against
`THROTTLE_WEBSOCKETS`. Over a limit: 429 with `Retry-After` (the seconds until the window
ends), the error body of docs/api.md §14 on API paths; a websocket is refused at the handshake
with HTTP 429, before it is accepted. The client address is `client_address`'s
(leaderboard_project/proxies.py), the one every per-address limit counts.

Counted as the player reads' limits are (boards/throttles.py): fixed windows in Redis,
`rediskit/lua/throttle.lua`, one round trip. nginx in front (scripts/web.py) limits the same
reads it answers from its edge cache with the same rate, so cached answers count too; Django's
limit covers every topology, nginx or not.

With Redis unreachable the request is let through: the reads themselves degrade to Postgres
and stay up, and a limit that turned every reader away while Redis is down would turn a Redis
outage into a full one. nginx's own limit on the cached reads does not depend on Redis."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from leaderboard_project.errors import error_body, error_response
from leaderboard_project.proxies import client_address
from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis
from rediskit.scripts import script

DURATIONS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

# The public reads of docs/api.md §15, by path: the game list and a game's description, a
# board's top, histogram and standings, and the player web pages (the index and everything
# under /games/). Only GET and HEAD count; the sign-in pages have their own limit
# (docs/operations.md, "Sign-in throttling").
PUBLIC_READ_PATH = re.compile(
    r"^/(?:api/v1/games(?:/[^/]+(?:/boards/[^/]+/(?:top|histogram|standings/[^/]+))?)?|games/.*)?$"
)
RATE_LIMITED_MESSAGE = "too many requests from this address; retry after {seconds} s"


class AddressLimits:
    # The clock the windows are counted on. Tests pin it inside one window (a real minute can
    # turn mid-test and reset every counter); nothing else replaces it.
    clock = staticmethod(time.time)


@lru_cache(maxsize=32)  # read per request, by this middleware and boards/throttles.py
def rate_parse(rate: str) -> tuple[int, int] | None:
    """'1200/min' -> (1200 requests, 60 seconds), as DRF writes rates; an empty rate is no
    limit. ValueError for anything else."""
    rate = rate.strip()
    if not rate:
        return None
    count, _, period = rate.partition("/")
    try:
        return int(count), DURATIONS[period.strip()[0]]
    except (ValueError, KeyError, IndexError):
        raise ValueError(f"{rate!r} is not a rate such as 1200/min") from None


def address_limit_hit(*, scope: str, rate: str, address: str) -> int | None:
    """Counts one request of *address* against *rate* under *scope*: None when it may go on
    (or Redis is unreachable), else the seconds until its window ends (Retry-After)."""
    limit = rate_parse(rate)
    if limit is None:
        return None
    allowed, seconds = limit
    now = AddressLimits.clock()
    counter = keys.throttle_key(scope, address, int(now // seconds))
    try:
        exceeded = int(script("throttle")(keys=[counter], args=[allowed, seconds], client=get_redis()))
    except REDIS_DOWN:
        return None
    if not exceeded:
        return None
    return max(1, math.ceil(seconds - now % seconds))


def rate_limited_response(request: HttpRequest, retry_after: int) -> HttpResponse:
    """The 429: the error body of docs/api.md §14 under /api/, a short page elsewhere."""
    message = RATE_LIMITED_MESSAGE.format(seconds=retry_after)
    if request.path.startswith("/api/"):
        response: HttpResponse = error_response("rate_limited", message, 429)
    else:
        page = f"<!doctype html><title>Too many requests</title><p>Too many requests: {message}.</p>\n"
        response = HttpResponse(page, status=429, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response


class PublicReadLimitMiddleware:
    """THROTTLE_PUBLIC_READS per client address on the public reads (PUBLIC_READ_PATH), before
    any view runs: a refused read costs one Redis round trip and nothing else."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("GET", "HEAD") and PUBLIC_READ_PATH.match(request.path):
            retry_after = address_limit_hit(
                scope="public_reads", rate=settings.THROTTLE_PUBLIC_READS, address=client_address(request)
            )
            if retry_after is not None:
                return rate_limited_response(request, retry_after)
        return self.get_response(request)


class _ScopeMeta:
    """A websocket scope's peer and X-Forwarded-For as `client_address` reads a request's META."""

    def __init__(self, scope: Mapping[str, Any]) -> None:
        client = scope.get("client")
        forwarded = [v.decode("latin1") for k, v in scope.get("headers", []) if k == b"x-forwarded-for"]
        self.META = {
            "REMOTE_ADDR": client[0] if client else "",
            "HTTP_X_FORWARDED_FOR": ",".join(forwarded) or None,
        }


def websocket_client_address(scope: Mapping[str, Any]) -> str:
    return client_address(_ScopeMeta(scope))


def websocket_rate_limited_body(retry_after: int) -> bytes:
    """The body of a refused handshake's 429 (docs/api.md §14's error body)."""
    return json.dumps(error_body("rate_limited", RATE_LIMITED_MESSAGE.format(seconds=retry_after))).encode()
