"""GET .../top: a page of a board, cached for a second."""

from __future__ import annotations

import time

from django.core.cache import cache
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from boards import selectors
from boards.api.common import (
    LIMIT_PARAM,
    OFFSET_PARAM,
    PUBLIC_READ_ERRORS,
    REGION_PARAM,
    TOP_CACHE_SECONDS,
    WINDOW_PARAM,
    JsonOnly,
    TopOutSerializer,
    TopQuerySerializer,
    board_window,
    entry_body,
    json_bytes,
)


class TopApi(APIView):
    """Public. A computed page is reused for one second from when it was computed, from this
    process's memory or (for pages near the top) the shared cache, so identical reads cost
    Redis one query a second. Pages are kept as encoded JSON."""

    content_negotiation_class = JsonOnly
    _local: dict[str, tuple[float, bytes]] = {}
    _LOCAL_MAX = 1000  # pages kept in memory (at most ~20 kB each); the oldest go first
    SHARED_MAX_OFFSET = 1000  # deeper pages are rarely read twice in a second: not worth a SET

    @classmethod
    def _cached(cls, key: str, shared: bool) -> bytes | None:
        now = time.time()
        hit = cls._local.get(key)
        if hit is not None and now - hit[0] < TOP_CACHE_SECONDS:
            return hit[1]
        if shared:
            hit = cache.get(key)
            if hit is not None and now - hit[0] < TOP_CACHE_SECONDS:
                cls._keep(key, hit)
                return hit[1]
        return None

    @classmethod
    def _keep(cls, key: str, hit: tuple[float, bytes]) -> None:
        local = cls._local
        local.pop(key, None)
        while len(local) >= cls._LOCAL_MAX:
            del local[next(iter(local))]  # dicts keep insertion order: the oldest page
        local[key] = hit

    @classmethod
    def _remember(cls, key: str, body: bytes, shared: bool) -> None:
        hit = (time.time(), body)
        cls._keep(key, hit)
        if shared:
            cache.set(key, hit, TOP_CACHE_SECONDS)

    @extend_schema(
        operation_id="boards_top",
        summary="The top of a board",
        parameters=[WINDOW_PARAM, REGION_PARAM, LIMIT_PARAM, OFFSET_PARAM],
        responses={200: TopOutSerializer, **PUBLIC_READ_ERRORS},
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        cfg, q, window = board_window(game, board, request, TopQuerySerializer)
        key = f"top:{cfg.id}:{window}:{q['offset']}:{q['limit']}"
        shared = q["offset"] < self.SHARED_MAX_OFFSET
        content = self._cached(key, shared)
        if content is None:
            page = selectors.board_top(cfg, window=window, offset=q["offset"], limit=q["limit"])
            body = {
                "game": game,
                "board": board,
                "window": window,
                "total": page.total,
                "entries": [entry_body(e) for e in page.entries],
            }
            if page.degraded:
                body["degraded"] = True
            content = json_bytes(body)
            if not page.degraded:
                self._remember(key, content, shared)
        response = HttpResponse(content, content_type="application/json")
        response["Cache-Control"] = "public, max-age=1"
        return response
