"""What every game-server endpoint shares: HMAC authentication, the game from the URL, the
documented errors."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.views import APIView

from leaderboard_project.errors import (
    ErrorBodySerializer,
    NotFound,
)
from scores.auth import ServerKeyAuthentication, server_key_permission
from scores.selectors import cached_game

ERRORS = {
    400: OpenApiResponse(ErrorBodySerializer, description="invalid body; nothing stored"),
    401: OpenApiResponse(ErrorBodySerializer, description="missing, malformed or wrong signature"),
    403: OpenApiResponse(ErrorBodySerializer, description="key of another game, revoked, or without scope"),
    413: OpenApiResponse(ErrorBodySerializer, description="body too large"),
}
# docs/api.md §4.5: the boards are too far behind to keep the 1 s promise (scores/admission.py)
SUBMIT_ERRORS = {
    **ERRORS,
    503: OpenApiResponse(
        ErrorBodySerializer,
        description="`overloaded`: nothing stored; retry the same body after `Retry-After` seconds",
    ),
}


class ServerApiView(APIView):
    authentication_classes = [ServerKeyAuthentication]
    permission_classes = [server_key_permission("submit")]

    def game(self) -> Any:
        # every game-server endpoint writes or reads Postgres: no stale configuration here
        game = cached_game(self.kwargs["game"], stale_ok=False)[0]
        if game is None:
            raise NotFound(f"unknown game {self.kwargs['game']!r}")
        return game


class TextField(serializers.CharField):
    """Text as JSON sends it: a string. DRF's CharField would also take a number (5 becomes
    "5"), which the schema's `type: string` does not allow (docs/api.md §15)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ExactIdField(serializers.RegexField):
    """An id taken exactly as sent (docs/api.md §1.1): no trimming, and the whole value
    must match (Python's `$` alone would let a trailing newline through)."""

    def __init__(self, regex: str, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        # (DRF formats the message: braces in the pattern are doubled)
        form = regex.replace("{", "{{").replace("}", "}}")
        kwargs.setdefault("error_messages", {"invalid": f"must be exactly of the form {form}, with nothing around it"})
        super().__init__(regex, **kwargs)
        self._exact = re.compile(regex[1:-1] if regex.startswith("^") and regex.endswith("$") else regex)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")  # a number is not an id, though its digits would match
        value = super().to_internal_value(data)
        if self._exact.fullmatch(value) is None:
            self.fail("invalid")
        return value
