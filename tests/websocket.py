"""A websocket test client for ASGI applications, after Channels' WebsocketCommunicator.

`channels.testing` cannot be imported without daphne (its package imports the live-server test
case), which this project does not install; this is the part of it the tests use."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from asgiref.testing import ApplicationCommunicator


class WebsocketCommunicator(ApplicationCommunicator):
    def __init__(self, application, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        parsed = urlparse(path)
        scope = {
            "type": "websocket",
            "path": unquote(parsed.path),
            "query_string": parsed.query.encode(),
            "headers": headers or [],
            "subprotocols": [],
        }
        super().__init__(application, scope)

    async def connect(self, timeout: float = 1) -> tuple[bool, int | None]:
        """(True, None) when accepted; (False, close code) when refused at the handshake."""
        await self.send_input({"type": "websocket.connect"})
        response = await self.receive_output(timeout)
        if response["type"] == "websocket.close":
            return False, response.get("code", 1000)
        assert response["type"] == "websocket.accept", response
        return True, None

    async def receive_from(self, timeout: float = 1) -> str:
        """The next text frame; fails if the application sent anything else (a close)."""
        response = await self.receive_output(timeout)
        assert response["type"] == "websocket.send" and "text" in response, response
        return response["text"]

    async def disconnect(self, code: int = 1000, timeout: float = 1) -> None:
        await self.send_input({"type": "websocket.disconnect", "code": code})
        await self.wait(timeout)
