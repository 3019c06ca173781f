"""CORS for browser game clients (docs/clients.md).

- The public reads, `top` and `histogram`, answer `Access-Control-Allow-Origin: *` to every
  request, with or without an Origin: the answer is the same for everyone, so a cache in front
  (nginx) may keep one copy for all.
- The rest of a game's read API (a player's rank, friends, standings... with a player token)
  answers CORS headers only to a page on one of the game's `[game] allowed_origins` or the
  operator-wide CORS_ALLOWED_ORIGINS, for GET and HEAD, preflight included. Credentials
  (cookies) are never allowed across origins: a page reads with the player's bearer token.
- Any other origin gets no CORS headers at all, and its request goes on exactly as before (the
  browser then keeps the answer from the page).

The websocket's origin check (boards/routing.py) accepts the same origins."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

from scores.selectors import origin_allowed

_GAME_PATH = re.compile(r"^/api/v1/games/(?P<game>[^/]+)(?P<rest>/.*)?$")
_PUBLIC_READ = re.compile(r"^/boards/[^/]+/(?:top|histogram)/?$")

ALLOWED_METHODS = "GET, HEAD, OPTIONS"
# what a game client sends: its token, and content negotiation
ALLOWED_HEADERS = "authorization, content-type, accept"
# a throttled or overloaded answer says when to come back; the page may read it
EXPOSED_HEADERS = "Retry-After"
PREFLIGHT_MAX_AGE = "600"  # seconds a browser may reuse a preflight answer


def _is_preflight(request: HttpRequest) -> bool:
    return request.method == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META


class CorsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        match = _GAME_PATH.match(request.path_info)
        if match is None:
            return self.get_response(request)
        if _PUBLIC_READ.match(match["rest"] or ""):
            response = HttpResponse(status=204) if _is_preflight(request) else self.get_response(request)
            response["Access-Control-Allow-Origin"] = "*"
            response["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
            if _is_preflight(request):
                self._preflight_headers(response)
            return response
        origin = request.META.get("HTTP_ORIGIN")
        allowed = origin is not None and origin_allowed(match["game"], origin=origin)
        if allowed and _is_preflight(request):
            response = HttpResponse(status=204)
            self._preflight_headers(response)
        else:
            response = self.get_response(request)
        if allowed and request.method in ("GET", "HEAD", "OPTIONS"):
            response["Access-Control-Allow-Origin"] = origin
            response["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
        # the answer depends on the Origin: a shared cache must not hand one origin's to another
        patch_vary_headers(response, ("Origin",))
        return response

    @staticmethod
    def _preflight_headers(response: HttpResponse) -> None:
        response["Access-Control-Allow-Methods"] = ALLOWED_METHODS
        response["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
        response["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
