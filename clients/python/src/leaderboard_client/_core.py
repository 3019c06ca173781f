"""What the sync and the asyncio clients share: building each request (path, query, body,
signature) and reading each answer (types or exceptions), and the retry policy. Only sending
and sleeping differ between the two."""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import httpx

from leaderboard_client.errors import ApiError, ServiceUnavailable, error_for
from leaderboard_client.signing import signed_headers
from leaderboard_client.types import (
    JSON,
    EventsPage,
    Friends,
    Histogram,
    Match,
    PlayerToken,
    Standing,
    Standings,
    Submitted,
    Top,
)

BATCH_LIMIT = 1000  # matches per batch request (docs/api.md §4)
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending the same request again.

    Retried: no answer (refused, dropped, timed out) and the statuses below, with the same body,
    hence the same match_id (the service counts a match once, docs/api.md §4). A
    `Retry-After` is waited out (plus up to 10 % jitter); without one, full-jitter exponential
    backoff. A `Retry-After` longer than `max_retry_after` is not waited: the error is raised."""

    attempts: int = 6  # tries in all, the first included
    base_delay: float = 0.2  # seconds: backoff before the second try, doubling
    max_delay: float = 10.0
    max_retry_after: float = 120.0
    statuses: frozenset[int] = frozenset({429, 502, 503, 504})

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        if retry_after is not None:
            return retry_after + random.uniform(0, 0.1 * retry_after + 0.05)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** (retry - 1)))


NO_RETRIES = RetryPolicy(attempts=1)


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header as seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(when.tzinfo)).total_seconds())


@dataclass(frozen=True)
class Call:
    """One API call: the request to (re)send and how to read its answer."""

    method: str
    path: str  # with the query string, exactly as sent and signed
    body: bytes
    parse: Callable[[int, Any], Any]
    signed: bool = True
    token: str | None = None

    def headers(self, key_id: str | None, secret: str | None) -> dict[str, str]:
        h = {"Accept": "application/json"}
        if self.body:
            h["Content-Type"] = "application/json"
        if self.token is not None:
            h["Authorization"] = f"Bearer {self.token}"
        elif self.signed and key_id and secret:
            h.update(signed_headers(key_id, secret, self.method, self.path, self.body))
        return h


def error_of(response: httpx.Response) -> ApiError:
    retry_after = retry_after_seconds(response.headers.get("Retry-After"))
    code, message, body = None, response.reason_phrase or f"HTTP {response.status_code}", None
    try:
        body = response.json()
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict):
            code, message = err.get("code"), err.get("message", message)
    except ValueError:
        pass  # not JSON: a proxy's page (nginx's 502): the status says it
    return error_for(response.status_code, code, message, retry_after=retry_after, body=body)


def retryable(policy: RetryPolicy, error: Exception) -> bool:
    if isinstance(error, httpx.TransportError):
        return True
    if isinstance(error, ApiError) and error.status in policy.statuses:
        return error.retry_after is None or error.retry_after <= policy.max_retry_after
    return False


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class Api:
    """The calls of docs/api.md for one game, as Call values."""

    def __init__(self, game: str) -> None:
        self.game = game

    def _path(self, *segments: str, **query: Any) -> str:
        path = "/api/v1/games/" + "/".join(quote(str(s), safe="") for s in (self.game, *segments))
        params = {k: v for k, v in query.items() if v is not None}
        return path + ("?" + urlencode(params) if params else "")

    def submit(self, match: Match) -> Call:
        return Call("POST", self._path("matches"), _json(match.to_json()), _submitted)

    def submit_batch(self, matches: list[Match]) -> Call:
        body = _json({"matches": [m.to_json() for m in matches]})
        return Call("POST", self._path("matches", "batch"), body, _batch)

    def top(self, board: str, *, window: str, limit: int, offset: int | None, cursor: str | None,
            region: str | None) -> Call:  # fmt: skip
        path = self._path("boards", board, "top", window=window, region=region, limit=limit, offset=offset,
                          cursor=cursor)  # fmt: skip
        return Call("GET", path, b"", lambda _s, d: Top.from_json(d), signed=False)

    def player(self, board: str, player: str, *, window: str, around: int, region: str | None,
               token: str | None) -> Call:  # fmt: skip
        path = self._path("boards", board, "players", player, window=window, region=region, around=around)
        return Call("GET", path, b"", lambda _s, d: Standing.from_json(d), token=token)

    def friends(self, board: str, player: str, *, window: str, region: str | None, token: str | None) -> Call:
        path = self._path("boards", board, "players", player, "friends", window=window, region=region)
        return Call("GET", path, b"", lambda _s, d: Friends.from_json(d), token=token)

    def standings(self, board: str, window: str, *, limit: int, offset: int, region: str | None,
                  version: int | None, group: str | None) -> Call:  # fmt: skip
        path = self._path("boards", board, "standings", window, limit=limit, offset=offset, region=region,
                          version=version, group=group)  # fmt: skip
        return Call("GET", path, b"", lambda _s, d: Standings.from_json(d))

    def events(self, *, after: str | None, limit: int) -> Call:
        path = self._path("events", after=after, limit=limit)
        return Call("GET", path, b"", lambda _s, d: EventsPage.from_json(d))

    def histogram(self, board: str, *, window: str, region: str | None) -> Call:
        path = self._path("boards", board, "histogram", window=window, region=region)
        return Call("GET", path, b"", lambda _s, d: Histogram.from_json(d), signed=False)

    def player_token(self, player: str) -> Call:
        def parse(_s: int, d: JSON) -> PlayerToken:
            return PlayerToken(player, d["token"], datetime.fromisoformat(d["expires_at"].replace("Z", "+00:00")))

        # a signed minting request is served once (docs/api.md §3.1): the nonce keeps two
        # tokens asked for the same player within one second two requests
        return Call("POST", self._path("players", player, "token", nonce=secrets.token_hex(8)), b"", parse)

    def set_friends(self, player: str, friends: Iterable[str]) -> Call:
        body = _json({"friends": list(friends)})
        return Call("PUT", self._path("players", player, "friends"), body, lambda _s, d: list(d["friends"]))


def _submitted(_status: int, d: JSON) -> Submitted:
    return Submitted(d["match_id"], d["status"], bool(d.get("duplicate", False)))


def _batch(_status: int, d: JSON) -> list[Submitted]:
    out = []
    for r in d["results"]:
        err = r.get("error")
        error = None
        if r.get("status") == "rejected":
            err = err if isinstance(err, dict) else {}
            error = error_for(400, err.get("code"), err.get("message", "rejected"), body=err)
        out.append(Submitted(r["match_id"], r["status"], bool(r.get("duplicate", False)), error))
    return out


def chunks(matches: list[Match]) -> list[list[Match]]:
    return [matches[i : i + BATCH_LIMIT] for i in range(0, len(matches), BATCH_LIMIT)] or []


def answer(call: Call, response: httpx.Response) -> Any:
    """The call's typed answer, or its exception."""
    if response.status_code >= 400:
        raise error_of(response)
    return call.parse(response.status_code, response.json())


__all__ = ["Api", "Call", "RetryPolicy", "NO_RETRIES", "ServiceUnavailable", "answer", "chunks", "retryable"]
