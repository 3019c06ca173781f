"""Rate limits for player reads (DRF throttling on the shared cache): 429 with Retry-After.

Game servers (signed requests) and staff are not limited: they read on behalf of many
players from one address."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from scores.auth import PlayerPrincipal, ServerPrincipal


def _exempt(request: Request) -> bool:
    user = request.user
    return isinstance(user, ServerPrincipal) or bool(getattr(user, "is_staff", False))


class PlayerReadThrottle(SimpleRateThrottle):
    """Per player token (or signed-in user)."""

    scope = "player_reads"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if _exempt(request):
            return None
        user = request.user
        if isinstance(user, PlayerPrincipal):
            ident = f"p{user.player_pk}"
        elif user is not None and getattr(user, "is_authenticated", False):
            ident = f"u{user.pk}"
        else:
            return None
        return self.cache_format % {"scope": self.scope, "ident": ident}


class AddressReadThrottle(SimpleRateThrottle):
    """Per client address, whoever it claims to be."""

    scope = "address_reads"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if _exempt(request):
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
