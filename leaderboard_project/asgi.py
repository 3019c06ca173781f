"""ASGI entry point: HTTP through Django, websockets through Channels."""

import os

from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_project.settings")
django_asgi_app = get_asgi_application()

websocket_urlpatterns: list = []  # contract section 9: live updates (a later issue)

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
