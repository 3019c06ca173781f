"""Browser-facing protections: a Content-Security-Policy on every page, and sign-ins throttled
against password guessing (the admin's and the player pages', with django-axes). docs/operations.md,
"Production settings", says how a deployment behind TLS turns on the rest (DEPLOY_HTTPS), and
"Sign-in throttling" how the throttle counts."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from axes.backends import AxesBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_credentials
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Sum
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
# django-axes counts failed sign-ins in Postgres (AccessAttempt rows), per (account, client
# address) and per client address (AXES_LOCKOUT_PARAMETERS), the address from
# leaderboard_project/proxies.py. Nothing counts per account alone: failures from one address
# never keep the right password from working from another (docs/operations.md, "Sign-in
# throttling"). What is ours: the two limits, the request-less sign-ins, and the forms' message
# (which is why AxesMiddleware, whose one job is a lock-out page of its own, is not installed).

THROTTLED_MESSAGE = "Too many failed sign-ins. Wait {minutes} minutes and try again."


class SigninAttempts(AxesDatabaseHandler):
    """axes' database handler with a limit per counter: SIGNIN_FAILURES_PER_USER for one account
    from one address, SIGNIN_FAILURES_PER_ADDRESS (AXES_FAILURE_LIMIT) for one address in all.
    axes compares a single count with a single limit, so the account's count is scaled to reach
    AXES_FAILURE_LIMIT exactly when it reaches its own limit; the address's count is compared
    as it is."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        # one queryset per AXES_LOCKOUT_PARAMETERS entry, in its order: the account at this
        # address, then the address
        account, address = (
            qs.aggregate(n=Sum("failures_since_start"))["n"] or 0 for qs in self.get_user_attempts(request, credentials)
        )
        limit = settings.SIGNIN_FAILURES_PER_ADDRESS
        per_account = max(1, settings.SIGNIN_FAILURES_PER_USER)
        account_scaled = limit if account >= per_account else account * limit // per_account
        return max(address, account_scaled)


def signin_failure_limit(request: HttpRequest | None, credentials: dict[str, Any] | None) -> int:
    """AXES_FAILURE_LIMIT: the address's limit, the one axes compares with (SigninAttempts)."""
    return int(settings.SIGNIN_FAILURES_PER_ADDRESS)


def signin_cool_off(request: HttpRequest | None) -> timedelta:
    """AXES_COOLOFF_TIME: how long failures count, from the last one."""
    return timedelta(seconds=settings.SIGNIN_THROTTLE_SECONDS)


def signin_throttled(request: HttpRequest, username: str) -> bool:
    """True when this account from this client address, or this address, failed too often
    within the last SIGNIN_THROTTLE_SECONDS."""
    return bool(AxesProxyHandler.is_locked(request, get_credentials(username)))


class SigninBackend(AxesBackend):
    """Django's username + password check behind axes' lock-out (axes' own backend only
    refuses, it never signs anyone in). A sign-in without a request (`manage.py shell`, the
    test client's login()) has no client address to count and is no stranger's: it is checked
    as ModelBackend checks it, uncounted (axes would refuse it outright)."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        if request is not None:
            super().authenticate(request, username=username, password=password, **kwargs)  # raises when locked out
        return ModelBackend.authenticate(self, request, username=username, password=password, **kwargs)


class _ThrottleMessage:
    """Shows the lock-out as such instead of "wrong password" (the form still refuses): before
    the password is tried when a limit was already reached (so a locked-out attempt is not
    counted and the lock-out ends on time), and on the failure that reaches it."""

    request: HttpRequest | None

    def clean(self) -> dict[str, Any]:
        username = self.data.get("username", "")  # type: ignore[attr-defined]
        if username and self.request is not None and signin_throttled(self.request, username):
            raise self._throttled()
        try:
            return super().clean()  # type: ignore[misc]
        except forms.ValidationError:
            if getattr(self.request, "axes_locked_out", False):
                raise self._throttled() from None
            raise

    @staticmethod
    def _throttled() -> forms.ValidationError:
        minutes = max(1, round(settings.SIGNIN_THROTTLE_SECONDS / 60))
        return forms.ValidationError(THROTTLED_MESSAGE.format(minutes=minutes), code="throttled")


class ThrottledAdminAuthenticationForm(_ThrottleMessage, AdminAuthenticationForm):
    pass


class ThrottledAuthenticationForm(_ThrottleMessage, AuthenticationForm):
    pass
