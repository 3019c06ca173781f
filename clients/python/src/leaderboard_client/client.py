"""The synchronous client (httpx). AsyncClient (leaderboard_client.aio) has the same methods."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

from leaderboard_client._core import Api, Call, RetryPolicy, answer, chunks, retryable
from leaderboard_client.batcher import Batcher
from leaderboard_client.errors import LeaderboardError, TransportError
from leaderboard_client.types import (
    Event,
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


class Client:
    """A game server's client for one game.

    `base_url`: the service (`https://leaderboard.example.com`); `key_id` and `secret`: the
    server key (`manage.py create_server_key`); without them only public reads work. Every call
    is retried on no answer, 429, 502, 503 and 504 (`retry`, see RetryPolicy), resending the
    same bytes, so a match is never sent under another match_id. Thread-safe."""

    def __init__(self, base_url: str, game: str, *, key_id: str | None = None, secret: str | None = None,
                 timeout: float = 10.0, retry: RetryPolicy | None = None,
                 http: httpx.Client | None = None) -> None:  # fmt: skip
        self.base_url = base_url.rstrip("/")
        self.game = game
        self.key_id, self._secret = key_id, secret
        self.retry = retry or RetryPolicy()
        self._api = Api(game)
        self._own_http = http is None
        self._http = http or httpx.Client(timeout=timeout)

    # --- plumbing ---------------------------------------------------------------------------

    def call(self, call: Call) -> Any:
        """Send one call, retrying as the policy says; its typed answer or exception."""
        retry = 0
        while True:
            try:
                request = self._http.build_request(
                    call.method,
                    self.base_url + call.path,
                    content=call.body,
                    headers=call.headers(self.key_id, self._secret),
                )
                return answer(call, self._http.send(request))
            except (httpx.TransportError, LeaderboardError) as exc:
                retry += 1
                if retry >= self.retry.attempts or not retryable(self.retry, exc):
                    if isinstance(exc, httpx.TransportError):
                        raise TransportError(f"{call.method} {call.path}: {exc!r}") from exc
                    raise
                time.sleep(self.retry.delay(retry, getattr(exc, "retry_after", None)))

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writes (server key, scope submit) --------------------------------------------------

    def submit(self, match: Match) -> Submitted:
        """Submit one match: Submitted(status="accepted" | "held", duplicate=...). Raises the
        error of docs/api.md §14 (InvalidMatch, ScoreOutOfBounds, MatchConflict...) when refused."""
        return self.call(self._api.submit(match))

    def submit_batch(self, matches: Iterable[Match]) -> list[Submitted]:
        """Submit many matches (any number: sent 1000 a request), answers in order. Each stands
        alone: a bad one is Submitted(status="rejected", error=...), the others are stored."""
        out: list[Submitted] = []
        for chunk in chunks(list(matches)):
            out += self.call(self._api.submit_batch(chunk))
        return out

    def batcher(self, **options: Any) -> Batcher:
        """A background batcher on this client (leaderboard_client.batcher.Batcher)."""
        return Batcher(self, **options)

    def set_friends(self, player: str, friends: Iterable[str]) -> list[str]:
        return self.call(self._api.set_friends(player, friends))

    def player_token(self, player: str) -> PlayerToken:
        """A new bearer token for the player's game client (docs/api.md §3.2)."""
        return self.call(self._api.player_token(player))

    # --- reads ------------------------------------------------------------------------------

    def top(self, board: str, *, window: str = "all", limit: int = 10, offset: int | None = None,
            cursor: str | None = None, region: str | None = None) -> Top:  # fmt: skip
        return self.call(self._api.top(board, window=window, limit=limit, offset=offset, cursor=cursor, region=region))

    def player(self, board: str, player: str, *, window: str = "all", around: int = 2, region: str | None = None,
               token: str | None = None) -> Standing:  # fmt: skip
        """A player's rank, score and neighbours; with `token`, read as that player."""
        return self.call(self._api.player(board, player, window=window, around=around, region=region, token=token))

    def friends(self, board: str, player: str, *, window: str = "all", region: str | None = None,
                token: str | None = None) -> Friends:  # fmt: skip
        return self.call(self._api.friends(board, player, window=window, region=region, token=token))

    def standings(self, board: str, window: str, *, limit: int = 100, offset: int = 0, region: str | None = None,
                  version: int | None = None, group: str | None = None) -> Standings:  # fmt: skip
        """A window's frozen standings (`daily:2026-11-29`, `season:s1`...); NotFrozen until then.
        `group`: a league group's own frozen standings in a season window (the `group` of the
        league read, docs/competitions.md "Leagues"); UnknownGroup if none is frozen there."""
        call = self._api.standings(
            board, window, limit=limit, offset=offset, region=region, version=version, group=group
        )
        return self.call(call)

    def histogram(self, board: str, *, window: str = "all", region: str | None = None) -> Histogram:
        return self.call(self._api.histogram(board, window=window, region=region))

    # --- the events feed (server key, scope events: docs/api.md §13.1) -----------------------

    def events_page(self, *, after: str | None = None, limit: int = 100) -> EventsPage:
        """One page of the game's events after the cursor `after` (None: the oldest kept).
        Raises CursorExpired when the feed has dropped the events after it."""
        return self.call(self._api.events(after=after, limit=limit))

    def events(self, *, after: str | None = None, limit: int = 1000, follow: bool = False,
               poll: float = 1.0) -> Iterator[Event]:  # fmt: skip
        """Every event after `after`, in order, each once. The caller keeps the cursor: store
        the `id` of the last event it has handled and pass it back to resume, after a restart
        too. Stops when caught up; with `follow`, asks again every `poll` seconds instead."""
        while True:
            page = self.events_page(after=after, limit=limit)
            yield from page.events
            after = page.next
            if not page.events:
                if not follow:
                    return
                time.sleep(poll)


class PlayerTokens:
    """Player tokens reused until they are about to expire: ask for a player's token each time
    their client connects, and the service is asked only when the old one is near its end."""

    def __init__(self, client: Client, *, refresh_before: float = 300.0) -> None:
        self.client = client
        self.refresh_before = refresh_before
        self._tokens: dict[str, PlayerToken] = {}
        self._lock = threading.Lock()

    def get(self, player: str) -> PlayerToken:
        with self._lock:
            token = self._tokens.get(player)
        if token is None or token.expires_within(self.refresh_before):
            token = self.client.player_token(player)
            with self._lock:
                self._tokens[player] = token
        return token
