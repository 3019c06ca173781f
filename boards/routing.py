"""Websocket routes (docs/api.md §9), and the stack every websocket passes through."""

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings
from django.urls import re_path

from boards.consumers import SERVER_SEND, BoardConsumer, NotFoundConsumer
from leaderboard_project.limits import address_limit_hit, websocket_client_address, websocket_rate_limited_body
from scores.selectors import origin_allowed

_GAME_PATH = re.compile(r"^/ws/games/(?P<game>[^/]+)/")

websocket_urlpatterns = [
    re_path(r"^ws/games/(?P<game>[^/]+)/boards/(?P<board>[^/]+)/?$", BoardConsumer.as_asgi()),
    re_path(r"", NotFoundConsumer.as_asgi()),
]


class BrowserOriginValidator(OriginValidator):
    """Refuses a handshake whose Origin is not one of ALLOWED_HOSTS, nor one of the game's
    browser client origins (docs/clients.md), with HTTP 403: a page on another site must not
    open a socket with a visitor's session cookie and read their rank. A client that sends no
    Origin is not a browser (a game client with a token) and is let through.

    A page on a game's allowed origin is another site: its socket authenticates with the
    player's `?token=` only, never with a session cookie the browser may send along."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        origin = next((v for k, v in scope.get("headers", []) if k == b"origin"), None)
        if origin is None:
            return await self.application(scope, receive, send)
        try:
            text = origin.decode("latin1")
            parsed = urlparse(text)
        except (UnicodeDecodeError, ValueError):
            return await WebsocketDenier()(scope, receive, send)
        if self.validate_origin(parsed):
            return await self.application(scope, receive, send)
        game = _GAME_PATH.match(scope.get("path", ""))
        if game is not None and await database_sync_to_async(origin_allowed)(game["game"], origin=text):
            headers = [(k, v) for k, v in scope["headers"] if k != b"cookie"]
            return await self.application({**scope, "headers": headers}, receive, send)
        return await WebsocketDenier()(scope, receive, send)


class ServerSend:
    """Puts the server's own send in the scope (SERVER_SEND), for the live fan-out: the
    middlewares below wrap send for what a text frame never needs (the session's wrapper reads
    the session on every message, the gauge counts accepts and closes), and the hub sends each
    update to thousands of sockets (boards/consumers.py). Everything else goes through them."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        return await self.application({**scope, SERVER_SEND: send}, receive, send)


class HandshakeLimit:
    """THROTTLE_WEBSOCKETS per client address (leaderboard_project/limits.py), before anything
    else looks at the handshake: over it, the handshake is answered HTTP 429 with Retry-After
    and the error body of docs/api.md §14 (the ASGI server's `websocket.http.response`
    extension, which uvicorn has), never accepted. A server without the extension can only
    refuse it plainly (its 403)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket":
            hit = sync_to_async(address_limit_hit, thread_sensitive=False)  # the sync Redis client
            address = websocket_client_address(scope)
            retry_after = await hit(scope="websockets", rate=settings.THROTTLE_WEBSOCKETS, address=address)
            if retry_after is not None:
                await receive()  # websocket.connect: the handshake, answered below instead of accepted
                if "websocket.http.response" not in scope.get("extensions", {}):
                    return await send({"type": "websocket.close"})
                headers = [(b"content-type", b"application/json"), (b"retry-after", str(retry_after).encode())]
                await send({"type": "websocket.http.response.start", "status": 429, "headers": headers})
                body = websocket_rate_limited_body(retry_after)
                return await send({"type": "websocket.http.response.body", "body": body})
        return await self.application(scope, receive, send)


def websocket_application(*, gauge: Callable[[Any], Any] | None = None) -> ServerSend:
    """The handshake limit per address, the origin check, then the session (scope["user"]),
    then the routes; `gauge` (the
    project's open-sockets gauge, leaderboard_project/asgi.py) wraps them inside ServerSend, so
    the hub's sends skip it too. boards/ does not import monitoring/, which imports boards/."""
    routes = HandshakeLimit(
        BrowserOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), settings.ALLOWED_HOSTS)
    )
    return ServerSend(gauge(routes) if gauge is not None else routes)
