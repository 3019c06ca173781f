from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from leaderboard_project.errors import error_response


class BodySizeLimitMiddleware:
    """Refuse oversized bodies with 413 before anything reads them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.limit = settings.MAX_REQUEST_BODY_BYTES

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response("invalid_request", "Content-Length is not a number", 400)
        if length > self.limit:
            return error_response(
                "payload_too_large", f"request body of {length} bytes exceeds the limit of {self.limit} bytes", 413
            )
        return self.get_response(request)
