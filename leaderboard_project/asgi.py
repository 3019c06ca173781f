"""ASGI entry point: HTTP through Django, websockets through Channels (boards/routing.py)."""

import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_project.settings")
django_asgi_app = get_asgi_application()  # sets Django up before the consumers import models

from boards.routing import websocket_application  # noqa: E402
from monitoring.asgi import WebsocketGauge  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": websocket_application(gauge=WebsocketGauge),
    }
)

from leaderboard_project.gcsettle import settle  # noqa: E402

settle()
