"""The live board (docs/api.md §9) over a websocket: typed messages, reconnecting after a
dropped connection (backoff with jitter) and when a relative window ends (close code 4000);
a refusal (bad token 4401, another game's token 4403, unknown board 4404, a refused origin)
raises the matching error instead."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from urllib.parse import quote, urlencode

import websockets
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from leaderboard_client._core import RetryPolicy
from leaderboard_client.errors import BadRequest, Forbidden, NotFound, TransportError, Unauthorized
from leaderboard_client.types import LiveMessage, live_message

WINDOW_ENDED = 4000
_REFUSALS = {4400: BadRequest, 4401: Unauthorized, 4403: Forbidden, 4404: NotFound}


def live_url(base_url: str, game: str, board: str, *, window: str = "all", token: str | None = None,
             region: str | None = None) -> str:  # fmt: skip
    ws = (
        "wss://" + base_url[len("https://") :]
        if base_url.startswith("https://")
        else "ws://" + base_url.split("://", 1)[-1]
    )
    query = {k: v for k, v in (("window", window), ("region", region), ("token", token)) if v is not None}
    return f"{ws.rstrip('/')}/ws/games/{quote(game, safe='')}/boards/{quote(board, safe='')}/?{urlencode(query)}"


async def subscribe(base_url: str, game: str, board: str, *, window: str = "all", token: str | None = None,
                    region: str | None = None, reconnect: bool = True,
                    retry: RetryPolicy | None = None) -> AsyncIterator[LiveMessage]:  # fmt: skip
    """Yield the board's messages: TopMessage, and with a player's `token` RankMessage and
    PassedMessage. After a reconnect the service sends the current top (and rank) again."""
    policy = retry or RetryPolicy()
    url = live_url(base_url, game, board, window=window, token=token, region=region)
    failures = 0
    while True:
        try:
            async with connect(url, open_timeout=10) as ws:
                failures = 0
                async for text in ws:
                    message = live_message(json.loads(text))
                    if message is not None:
                        yield message
            code = ws.close_code
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise (Forbidden if status == 403 else NotFound if status == 404 else TransportError)(
                f"websocket refused at the handshake: HTTP {status}"
            ) from exc
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd else None
        except (TimeoutError, OSError, InvalidHandshake, websockets.exceptions.WebSocketException) as exc:
            code = None
            if not reconnect:
                raise TransportError(f"websocket: {exc!r}") from exc
        if code in _REFUSALS:
            raise _REFUSALS[code](f"websocket closed with {code}", code=None)
        if not reconnect:
            return
        if code == WINDOW_ENDED:
            failures = 0  # the same URL now means the new window: back at once
            continue
        failures += 1
        await asyncio.sleep(policy.delay(min(failures, 8), None) + 0.1)
