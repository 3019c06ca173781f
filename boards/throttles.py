"""Rate limits for player reads: 429 with Retry-After.

Fixed windows counted in Redis: rediskit/lua/throttle.lua does INCR (+ EXPIRE) per limit, both
limits (per player token or signed-in user, per client address) in one round trip.
DRF's SimpleRateThrottle kept a list of timestamps per client in the cache (two cache round
trips and a pickle per limit), which cost more than the read it guarded. A fixed window lets
a client send up to twice the rate across a window boundary; for a limit meant to stop abuse,
not to meter, that is fine.

Game servers (signed requests) and staff are not limited: they read on behalf of many players
from one address. With Redis unreachable, requests are let through (the read itself degrades
to Postgres), as the cache-based throttle did."""

from __future__ import annotations

import math
import time

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from leaderboard_project.limits import rate_parse
from leaderboard_project.proxies import client_address
from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis
from rediskit.scripts import script
from scores.auth import PlayerPrincipal, ServerPrincipal


def _rate(scope: str) -> tuple[int, int] | None:
    return rate_parse(settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {}).get(scope) or "")


class PlayerReadThrottle(BaseThrottle):
    """`player_reads` per player token (or signed-in user) and `address_reads` per client
    address (REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]), in one Redis round trip."""

    # The clock the windows are counted on. Tests pin it inside one window (a real minute can
    # turn mid-test and reset every counter); nothing else replaces it.
    clock = staticmethod(time.time)

    def __init__(self) -> None:
        self.retry_after: int | None = None

    def limits(self, request: Request) -> list[tuple[str, str, int, int]]:
        """(scope, ident, requests, seconds) of every limit that applies to this request."""
        user = request.user
        if isinstance(user, ServerPrincipal) or getattr(user, "is_staff", False):
            return []
        out = []
        if isinstance(user, PlayerPrincipal):
            ident = f"p{user.player_pk}"
        elif user is not None and getattr(user, "is_authenticated", False):
            ident = f"u{user.pk}"
        else:
            ident = None
        if ident is not None and (rate := _rate("player_reads")):
            out.append(("player_reads", ident, *rate))
        if rate := _rate("address_reads"):
            out.append(("address_reads", self.get_ident(request), *rate))
        return out

    def counters(self, request: Request, now: float) -> tuple[list[tuple[str, str, int, int]], list[str], list[int]]:
        """The limits that apply, their counters' keys in the current windows and the script's
        ARGV pairs (allowed, seconds): what throttle.lua (or page.lua, folded) takes."""
        limits = self.limits(request)
        counters = [keys.throttle_key(scope, ident, int(now // seconds)) for scope, ident, _, seconds in limits]
        args = [n for _, _, allowed, seconds in limits for n in (allowed, seconds)]
        return limits, counters, args

    def verdict(self, limits: list[tuple[str, str, int, int]], exceeded: int, now: float) -> bool:
        """Whether the request may go on, given the script's answer (0, or the 1-based index
        of the first limit exceeded); sets Retry-After when not."""
        if exceeded:
            seconds = limits[exceeded - 1][3]
            self.retry_after = max(1, math.ceil(seconds - now % seconds))  # when its window ends
            return False
        return True

    def allow_request(self, request: Request, view: object) -> bool:
        now = self.clock()
        limits, counters, args = self.counters(request, now)
        if not limits:
            return True
        try:
            exceeded = int(script("throttle")(keys=counters, args=args, client=get_redis()))
        except REDIS_DOWN:
            return True
        return self.verdict(limits, exceeded, now)

    def get_ident(self, request: Request) -> str:
        """The client address (leaderboard_project/proxies.py: behind TRUSTED_PROXIES, the
        client they forwarded), in place of DRF's NUM_PROXIES count."""
        return client_address(request)

    def wait(self) -> float | None:
        return self.retry_after
