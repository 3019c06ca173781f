"""Websocket routes (contract section 9), and the stack every websocket passes through."""

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.security.websocket import OriginValidator
from django.conf import settings
from django.urls import re_path

from boards.consumers import BoardConsumer, NotFoundConsumer

websocket_urlpatterns = [
    re_path(r"^ws/games/(?P<game>[^/]+)/boards/(?P<board>[^/]+)/?$", BoardConsumer.as_asgi()),
    re_path(r"", NotFoundConsumer.as_asgi()),
]


class BrowserOriginValidator(OriginValidator):
    """Refuses a handshake whose Origin is not one of ALLOWED_HOSTS (HTTP 403): a page on another
    site must not open a socket with a visitor's session cookie and read their rank. A client
    that sends no Origin is not a browser (a game client with a token) and is let through."""

    def valid_origin(self, parsed_origin) -> bool:
        return parsed_origin is None or self.validate_origin(parsed_origin)


def websocket_application():
    """Origin check, then the session (scope["user"]), then the routes."""
    return BrowserOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)), settings.ALLOWED_HOSTS)
