"""The events feed (docs/api.md §13.1): a game's score events after a cursor, for a key of
scope `events`. What the feed holds and why it loses nothing: scores/events.py."""

from __future__ import annotations

import re

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request

from leaderboard_project.errors import ApiError, ErrorBodySerializer
from scores import events
from scores.api.common import ERRORS, ServerApiView
from scores.auth import server_key_permission

_LIMIT = re.compile(r"[0-9]{1,4}")


class EventSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="this event's cursor: `after=` it continues after this event")
    type = serializers.ChoiceField(choices=events.TYPES)
    at = serializers.DateTimeField(help_text="when the change was made")
    data = serializers.DictField(help_text="by type: docs/api.md §13.1")  # type: ignore[assignment]  # the key is "data"


class EventsOutSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    next = serializers.CharField(help_text="ask again with after= this to continue (also when no events came)")


class EventsApi(ServerApiView):
    permission_classes = [server_key_permission("events")]

    @extend_schema(
        operation_id="events_list",
        summary="The game's score events after a cursor",
        parameters=[
            OpenApiParameter(
                "after",
                {"type": "string", "pattern": f"^{events.CURSOR_PATTERN}$"},
                description="a cursor the feed gave (`next`, or an event's `id`); omitted: from the oldest event kept",
            ),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": events.LIMIT_MAX, "default": events.LIMIT_DEFAULT},
                description=f"events per page (1-{events.LIMIT_MAX}, default {events.LIMIT_DEFAULT})",
            ),
        ],
        responses={
            200: EventsOutSerializer,
            **{code: ERRORS[code] for code in (401, 403)},
            400: OpenApiResponse(ErrorBodySerializer, description="`invalid_cursor`, or a `limit` out of 1-1000"),
            404: OpenApiResponse(ErrorBodySerializer, description="`unknown_game`"),
            410: OpenApiResponse(ErrorBodySerializer, description="`cursor_expired`: the events after it were dropped"),
        },
    )  # fmt: skip
    def get(self, request: Request, game: str) -> HttpResponse:
        game_obj = self.game()
        params = request.query_params
        # an empty parameter is an absent one, as DRF reads every other query here
        limit_text = params.get("limit") or str(events.LIMIT_DEFAULT)
        if _LIMIT.fullmatch(limit_text) is None or not 1 <= int(limit_text) <= events.LIMIT_MAX:
            raise ApiError(f"limit: an integer from 1 to {events.LIMIT_MAX}", code="invalid_body")
        after_text = params.get("after") or None
        try:
            after = None if after_text is None else events.cursor_parse(after_text)
            page = events.events_page(game_id=game_obj.id, after=after, limit=int(limit_text))
        except events.CursorInvalid as exc:
            raise ApiError(f"after: {exc}", code="invalid_cursor") from None
        except events.CursorExpired as exc:
            raise ApiError(str(exc), code="cursor_expired", status_code=410) from None
        # the stored events' text as it is (scores/events.py EventsPage.body): no parse, no render
        return HttpResponse(page.body(), content_type="application/json")
