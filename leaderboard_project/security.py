"""Browser-facing protections: a Content-Security-Policy on every page, and sign-ins throttled
against password guessing (the admin's and the player pages'). docs/operations.md, "Production
settings", says how a deployment behind TLS turns on the rest (DEPLOY_HTTPS)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject

# --- Content-Security-Policy -------------------------------------------------------------------

# The pages load only this server's scripts and styles; the few inline ones carry the request's
# nonce (templates use {{ request.csp_nonce }}). Style attributes stay allowed (the admin's
# templates and ours use a few; they cannot run code). Websockets are same-origin ('self').
PAGE_POLICY = (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'nonce-{nonce}'; "
    "style-src-attr 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# ReDoc and Swagger UI inject their own <style> elements and ReDoc runs a worker from a blob:
API_DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
API_DOCS_PREFIXES = ("/api/docs/", "/api/redoc/")


class ContentSecurityPolicyMiddleware:
    """Sets Content-Security-Policy on HTML answers (JSON and CSV need none), with a fresh nonce
    per request for the inline scripts and styles that must stay inline. The nonce is drawn only
    when a template or the header reads it: an API answer never needs one (docs/BENCHMARKS.md,
    "The Content-Security-Policy nonce, drawn only when read")."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        nonce = SimpleLazyObject(_draw_nonce)
        request.csp_nonce = nonce  # type: ignore[attr-defined]
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html") and "Content-Security-Policy" not in response:
            policy = API_DOCS_POLICY if request.path.startswith(API_DOCS_PREFIXES) else PAGE_POLICY
            response["Content-Security-Policy"] = policy.format(nonce=str(nonce))
        return response


def _draw_nonce() -> str:
    return secrets.token_urlsafe(16)


# --- sign-in throttling ------------------------------------------------------------------------

THROTTLED_MESSAGE = "Too many failed sign-ins. Wait {minutes} minutes and try again."


def _client_address(request: HttpRequest | None) -> str:
    """The client's address as the proxies in front saw it (NUM_PROXIES, as the API's throttles)."""
    if request is None:
        return "-"
    proxies = settings.REST_FRAMEWORK.get("NUM_PROXIES", 0)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [h.strip() for h in forwarded.split(",") if h.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    return request.META.get("REMOTE_ADDR", "-")


def _keys(request: HttpRequest | None, username: str) -> tuple[str, str]:
    # in the shared cache (Redis) so every web process counts the same failures
    return f"signin-fail:user:{username.strip().lower()}", f"signin-fail:addr:{_client_address(request)}"


def signin_throttled(request: HttpRequest | None, username: str) -> bool:
    """True when this account, or this address, failed too often lately. With Redis down the
    count is unknown and sign-ins are allowed (moderators keep working; the password stays the
    barrier)."""
    user_key, addr_key = _keys(request, username)
    counts = cache.get_many([user_key, addr_key])
    return (counts.get(user_key) or 0) >= settings.SIGNIN_FAILURES_PER_USER or (
        counts.get(addr_key) or 0
    ) >= settings.SIGNIN_FAILURES_PER_ADDRESS


def _signin_failed(request: HttpRequest | None, username: str) -> None:
    for key in _keys(request, username):
        # add() starts the window; incr() never extends it, so a lock-out ends on time
        if not cache.add(key, 1, timeout=settings.SIGNIN_THROTTLE_SECONDS):
            try:
                cache.incr(key)
            except ValueError:  # expired between the two calls
                cache.add(key, 1, timeout=settings.SIGNIN_THROTTLE_SECONDS)


class ThrottledModelBackend(ModelBackend):
    """Django's username + password check, refusing every attempt (the right password too) for
    an account or an address past its failure limit, so guessing costs the window per few tries."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if username is None:
            username = kwargs.get(self._username_field(), "")
        if username and signin_throttled(request, username):
            raise PermissionDenied("sign-in throttled")  # stops every backend; Django logs it as a failure
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and username:
            _signin_failed(request, username)
        return user

    @staticmethod
    def _username_field() -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD


class _ThrottleMessage:
    """Shows the lock-out as such instead of "wrong password" (the form still refuses)."""

    request: HttpRequest | None

    def clean(self) -> dict[str, Any]:
        username = self.data.get("username", "")  # type: ignore[attr-defined]
        if username and signin_throttled(self.request, username):
            minutes = max(1, round(settings.SIGNIN_THROTTLE_SECONDS / 60))
            raise forms.ValidationError(THROTTLED_MESSAGE.format(minutes=minutes), code="throttled")
        return super().clean()  # type: ignore[misc]


class ThrottledAdminAuthenticationForm(_ThrottleMessage, AdminAuthenticationForm):
    pass


class ThrottledAuthenticationForm(_ThrottleMessage, AuthenticationForm):
    pass
