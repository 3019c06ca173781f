"""Postgres outages: answer fast, come back fast.

- A request that needs Postgres while it is down gets 503 with Retry-After and the contract's
  error body (DatabaseUnavailableMiddleware), within DB_POOL_TIMEOUT (0.5 s by default) of
  asking the pool for a connection, never the 30 s it used to wait.
- psycopg_pool retries a failed connection after 1 s, doubling each time: after a 20 s outage
  its next attempt came up to 16 s after Postgres was back (service resumed 8.1 s late).
  RECONNECT_DELAY makes it retry at a steady pace instead, so service resumes within about
  a second of Postgres returning, without a restart.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from psycopg_pool.base import AttemptWithBackoff

RECONNECT_DELAY = 0.5  # seconds between the pool's attempts to reach Postgres again
RETRY_AFTER_SECONDS = 1


def pool_reconnect_steadily() -> None:
    """Called once from settings: every pool of the process retries every RECONNECT_DELAY s."""
    AttemptWithBackoff.INITIAL_DELAY = RECONNECT_DELAY
    AttemptWithBackoff.DELAY_BACKOFF = 1.0


def database_unavailable() -> HttpResponse:
    from leaderboard_project.errors import error_response  # (settings import this module: DRF not yet)

    response = error_response(
        "database_unavailable", "the durable store is unreachable; retry in a moment (nothing was changed)", 503
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Postgres unreachable (a refused or broken connection, the pool's timeout) is a 503,
    not a 500: the request changed nothing (its transaction, if any, never committed)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            return database_unavailable()
        return None
