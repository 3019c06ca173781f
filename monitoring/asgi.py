"""Counts open websockets (leaderboard_websockets_open) around the ASGI application."""

from __future__ import annotations

from typing import Any

from monitoring.metrics import WEBSOCKETS


class WebsocketGauge:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        accepted = False

        async def counting_send(message: dict) -> None:
            nonlocal accepted
            if message.get("type") == "websocket.accept" and not accepted:
                accepted = True
                WEBSOCKETS.inc()
            elif message.get("type") == "websocket.close" and accepted:
                accepted = False
                WEBSOCKETS.dec()
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            if accepted:
                WEBSOCKETS.dec()
