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
    CURSOR_PARAM,
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
from boards.cursor import BadCursor, board_after, cursor_decode, next_cursor
from leaderboard_project.errors import ApiError


def _period(at: float) -> int:
    """The TOP_CACHE_SECONDS period of the wall clock a time falls in."""
    return int(at // TOP_CACHE_SECONDS)


def edge_expires(computed_at: float) -> str:
    """`X-Accel-Expires` for the edge cache (scripts/web.py): the last whole second of the
    page's period. nginx keeps an answer while that second lasts, so the page is gone from the
    edge when it is gone from here, and no copy is ever older than TOP_CACHE_SECONDS."""
    return f"@{int((_period(computed_at) + 1) * TOP_CACHE_SECONDS) - 1}"


class TopApi(APIView):
    """Public. A computed page is reused until the end of the wall-clock second it was computed
    in (never for a second or more), from this process's memory or (for pages near the top) the
    shared cache, so identical reads cost Redis one query a second; the edge cache in front
    keeps it exactly as long (docs/reads.md, "The edge cache"). Pages are kept as encoded JSON."""

    content_negotiation_class = JsonOnly
    _local: dict[str, tuple[float, bytes]] = {}
    _LOCAL_MAX = 1000  # pages kept in memory (at most ~20 kB each); the oldest go first
    SHARED_MAX_OFFSET = 1000  # deeper pages are rarely read twice in a second: not worth a SET

    @classmethod
    def _cached(cls, key: str, shared: bool) -> tuple[float, bytes] | None:
        period = _period(time.time())
        hit = cls._local.get(key)
        if hit is not None and _period(hit[0]) == period:
            return hit
        if shared:
            hit = cache.get(key)
            if hit is not None and _period(hit[0]) == period:
                cls._keep(key, hit)
                return hit
        return None

    @classmethod
    def _keep(cls, key: str, hit: tuple[float, bytes]) -> None:
        local = cls._local
        local.pop(key, None)
        while len(local) >= cls._LOCAL_MAX:
            del local[next(iter(local))]  # dicts keep insertion order: the oldest page
        local[key] = hit

    @classmethod
    def _remember(cls, key: str, hit: tuple[float, bytes], shared: bool) -> None:
        cls._keep(key, hit)
        if shared:
            cache.set(key, hit, TOP_CACHE_SECONDS)

    @extend_schema(
        operation_id="boards_top",
        summary="The top of a board",
        parameters=[WINDOW_PARAM, REGION_PARAM, LIMIT_PARAM, OFFSET_PARAM, CURSOR_PARAM],
        responses={200: TopOutSerializer, **PUBLIC_READ_ERRORS},
    )
    def get(self, request: Request, game: str, board: str) -> Response:
        cfg, q, window = board_window(game, board, request, TopQuerySerializer)
        cursor = q.get("cursor")
        if cursor is None:
            key = f"top:{cfg.id}:{window}:{q['offset']}:{q['limit']}"
            shared = q["offset"] < self.SHARED_MAX_OFFSET
        else:
            if q["offset"]:
                raise ApiError("cursor: use cursor or offset, not both", code="invalid_cursor")
            try:
                after = cursor_decode(cursor)
            except BadCursor as exc:
                raise ApiError(f"cursor: {exc}", code="invalid_cursor") from None
            key, shared = f"top:{cfg.id}:{window}:c{cursor}:{q['limit']}", False
        hit = self._cached(key, shared)
        if hit is None:
            computed_at = time.time()
            if cursor is None:
                page = selectors.board_top(cfg, window=window, offset=q["offset"], limit=q["limit"])
            else:
                page = board_after(cfg, window=window, cursor=after, limit=q["limit"])
            body = {
                "game": game,
                "board": board,
                "window": window,
                "total": page.total,
                "entries": [entry_body(e) for e in page.entries],
                "next_cursor": next_cursor(page),
            }
            if page.degraded:
                body["degraded"] = True
            hit = (computed_at, json_bytes(body))
            if not page.degraded:
                self._remember(key, hit, shared)
            expires = "0" if page.degraded else edge_expires(computed_at)  # 0: the edge keeps none
        else:
            expires = edge_expires(hit[0])
        response = HttpResponse(hit[1], content_type="application/json")
        response["Cache-Control"] = "public, max-age=1"
        response["X-Accel-Expires"] = expires
        return response
