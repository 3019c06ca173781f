"""Project middleware.

The session, authentication and messages middleware serve the admin, the player pages and
login. The Api* subclasses below step aside for the API requests that cannot use them:
- an API request that carries its own credentials (a player token or a server key's
  signature) never reads a session or a signed-in user (a fifth of a warm rank read's CPU);
- one that brings no session cookie has no session to read: it is anonymous, as Django's
  middleware would find it, without building the lazy session and user (the public reads:
  `top`, `histogram`, a game's description);
- no API answer reads or adds a message (they are the pages' and the admin's), so the
  messages storage, ~30 µs a request, is never built for /api/.
A request to /api/ with a session cookie and no such headers (a signed-in player's or staff
member's browser reading the API) goes through session and authentication as before, so
session reads of the API keep working. They stay subclasses of Django's classes, so the
admin's system checks still find them."""

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponse

from leaderboard_project.errors import error_response

API_PREFIX = "/api/"


def carries_api_credentials(request: HttpRequest) -> bool:
    """An /api/ request authenticated by the API's own headers (scores/auth.py): a bearer token
    or a server key's signature. With either, DRF answers from them (or 401) and never falls
    back to the session. Any other Authorization (say, Basic from a proxy in front) keeps it."""
    if not request.path_info.startswith(API_PREFIX):
        return False
    meta = request.META
    return (
        "HTTP_X_KEY_ID" in meta
        or "HTTP_X_SIGNATURE" in meta
        or meta.get("HTTP_AUTHORIZATION", "").startswith("Bearer ")
    )


class BodySizeLimitMiddleware:
    """Refuse oversized bodies with 413 before anything reads them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.limit = settings.MAX_REQUEST_BODY_BYTES

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response("invalid_request", "Content-Length is not a number", 400)
        if length > self.limit:
            return error_response(
                "payload_too_large", f"request body of {length} bytes exceeds the limit of {self.limit} bytes", 413
            )
        return self.get_response(request)


def _api_without_session_cookie(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX) and settings.SESSION_COOKIE_NAME not in request.COOKIES


def sessionless_api_request(request: HttpRequest) -> bool:
    """An /api/ request with its own credentials, or with no session cookie: no session to read."""
    return carries_api_credentials(request) or _api_without_session_cookie(request)


class ApiSessionMiddleware(SessionMiddleware):
    """SessionMiddleware, except for API requests that bring no session (sessionless_api_request)."""

    def __call__(self, request: HttpRequest):  # noqa: ANN204 - a response, or its coroutine under ASGI
        if sessionless_api_request(request):
            return self.get_response(request)
        return super().__call__(request)


class ApiAuthenticationMiddleware(AuthenticationMiddleware):
    """AuthenticationMiddleware, except for API requests that bring no session: with their own
    credentials DRF sets request.user from them (its SessionAuthentication is never reached);
    without, the request is anonymous, as a request without a session cookie always is."""

    def __call__(self, request: HttpRequest):  # noqa: ANN204
        if carries_api_credentials(request):
            return self.get_response(request)
        if _api_without_session_cookie(request):
            request.user = AnonymousUser()
            return self.get_response(request)
        return super().__call__(request)


class ApiMessageMiddleware(MessageMiddleware):
    """MessageMiddleware for everything but /api/: no API answer reads or adds a message."""

    def __call__(self, request: HttpRequest):  # noqa: ANN204
        if request.path_info.startswith(API_PREFIX):
            return self.get_response(request)
        return super().__call__(request)
