"""The asyncio client: Client's methods as coroutines, on httpx.AsyncClient."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

import httpx

from leaderboard_client._core import Api, Call, RetryPolicy, answer, chunks, retryable
from leaderboard_client.errors import LeaderboardError, TransportError
from leaderboard_client.live import subscribe
from leaderboard_client.types import (
    Event,
    EventsPage,
    Friends,
    Histogram,
    LiveMessage,
    Match,
    PlayerToken,
    Standing,
    Standings,
    Submitted,
    Top,
)


class AsyncClient:
    """As Client (leaderboard_client.client), with `await`; and `live()`, the board's websocket."""

    def __init__(self, base_url: str, game: str, *, key_id: str | None = None, secret: str | None = None,
                 timeout: float = 10.0, retry: RetryPolicy | None = None,
                 http: httpx.AsyncClient | None = None) -> None:  # fmt: skip
        self.base_url = base_url.rstrip("/")
        self.game = game
        self.key_id, self._secret = key_id, secret
        self.retry = retry or RetryPolicy()
        self._api = Api(game)
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)

    async def call(self, call: Call) -> Any:
        retry = 0
        while True:
            try:
                request = self._http.build_request(
                    call.method,
                    self.base_url + call.path,
                    content=call.body,
                    headers=call.headers(self.key_id, self._secret),
                )
                return answer(call, await self._http.send(request))
            except (httpx.TransportError, LeaderboardError) as exc:
                retry += 1
                if retry >= self.retry.attempts or not retryable(self.retry, exc):
                    if isinstance(exc, httpx.TransportError):
                        raise TransportError(f"{call.method} {call.path}: {exc!r}") from exc
                    raise
                await asyncio.sleep(self.retry.delay(retry, getattr(exc, "retry_after", None)))

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def submit(self, match: Match) -> Submitted:
        return await self.call(self._api.submit(match))

    async def submit_batch(self, matches: Iterable[Match]) -> list[Submitted]:
        out: list[Submitted] = []
        for chunk in chunks(list(matches)):
            out += await self.call(self._api.submit_batch(chunk))
        return out

    async def set_friends(self, player: str, friends: Iterable[str]) -> list[str]:
        return await self.call(self._api.set_friends(player, friends))

    async def player_token(self, player: str) -> PlayerToken:
        return await self.call(self._api.player_token(player))

    async def top(self, board: str, *, window: str = "all", limit: int = 10, offset: int | None = None,
                  cursor: str | None = None, region: str | None = None) -> Top:  # fmt: skip
        return await self.call(
            self._api.top(board, window=window, limit=limit, offset=offset, cursor=cursor, region=region)
        )

    async def player(self, board: str, player: str, *, window: str = "all", around: int = 2,
                     region: str | None = None, token: str | None = None) -> Standing:  # fmt: skip
        return await self.call(
            self._api.player(board, player, window=window, around=around, region=region, token=token)
        )

    async def friends(self, board: str, player: str, *, window: str = "all", region: str | None = None,
                      token: str | None = None) -> Friends:  # fmt: skip
        return await self.call(self._api.friends(board, player, window=window, region=region, token=token))

    async def standings(self, board: str, window: str, *, limit: int = 100, offset: int = 0,
                        region: str | None = None, version: int | None = None,
                        group: str | None = None) -> Standings:  # fmt: skip
        return await self.call(
            self._api.standings(board, window, limit=limit, offset=offset, region=region, version=version, group=group)
        )

    async def histogram(self, board: str, *, window: str = "all", region: str | None = None) -> Histogram:
        return await self.call(self._api.histogram(board, window=window, region=region))

    async def events_page(self, *, after: str | None = None, limit: int = 100) -> EventsPage:
        return await self.call(self._api.events(after=after, limit=limit))

    async def events(self, *, after: str | None = None, limit: int = 1000, follow: bool = False,
                     poll: float = 1.0) -> AsyncIterator[Event]:  # fmt: skip
        """As Client.events: every event after `after`, each once; the caller keeps the cursor."""
        while True:
            page = await self.events_page(after=after, limit=limit)
            for event in page.events:
                yield event
            after = page.next
            if not page.events:
                if not follow:
                    return
                await asyncio.sleep(poll)

    def live(self, board: str, *, window: str = "all", token: str | None = None, region: str | None = None,
             reconnect: bool = True) -> AsyncIterator[LiveMessage]:  # fmt: skip
        """The board's live messages (leaderboard_client.live.subscribe)."""
        return subscribe(self.base_url, self.game, board, window=window, token=token, region=region,
                         reconnect=reconnect, retry=self.retry)  # fmt: skip
