"""GET .../top: a page of a board, cached for a quarter of a second (TOP_CACHE_SECONDS)."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema

from boards import selectors
from boards.api.common import (
    CURSOR_PARAM,
    LIMIT_PARAM,
    OFFSET_PARAM,
    PUBLIC_READ_ERRORS,
    REGION_PARAM,
    WINDOW_PARAM,
    JsonOnly,
    TopOutSerializer,
    TopQuerySerializer,
    board_window,
    entry_body,
)
from boards.cursor import BadCursor, board_after, cursor_decode, next_cursor
from leaderboard_project.errors import ApiError
from leaderboard_project.plain import JSON, PlainApiView, json_bytes

ALLOW = "GET, HEAD, OPTIONS"  # what DRF's APIView says of this view


def cache_period(at: float) -> int:
    """The TOP_CACHE_SECONDS period of the wall clock a time falls in."""
    return int(at // settings.TOP_CACHE_SECONDS)


def edge_expires(computed_at: float) -> str:
    """`X-Accel-Expires` for the edge cache (scripts/web.py): the wall-clock second the page was
    computed in. nginx keeps an answer while that second lasts (it counts in whole seconds, so
    no shorter life is possible there), so no copy at the edge is a second old (docs/api.md §5);
    docs/reliability.md says what that costs against the 1 s of docs/api.md §4."""
    return f"@{int(computed_at)}"


class TopApi(PlainApiView):
    """Public. A computed page is reused until the end of the TOP_CACHE_SECONDS period of the wall
    clock it was computed in (a quarter of a second by default: the page's age adds to the
    projector's delay, and docs/api.md §4 gives both together 1 s), from this process's memory
    or (for pages near the top) the shared cache, so identical reads cost Redis one query a
    period; the edge cache in front keeps a signed-out answer to the end of its whole second
    (docs/reads.md, "The edge cache"). Pages are kept as encoded JSON.

    One implementation (docs/architecture.md, "One implementation per hot endpoint"): a GET
    goes to `get` with Django's own request (leaderboard_project.plain.PlainApiView)."""

    content_negotiation_class = JsonOnly
    plain_methods = ("GET", "HEAD")
    allow = ALLOW
    _local: dict[str, tuple[float, bytes]] = {}
    _LOCAL_MAX = 1000  # pages kept in memory (at most ~20 kB each); the oldest go first
    SHARED_MAX_OFFSET = 1000  # deeper pages are rarely read twice in a second: not worth a SET

    @staticmethod
    def page_response(hit: tuple[float, bytes], expires: str) -> HttpResponse:
        response = HttpResponse(hit[1], content_type=JSON)
        response["Cache-Control"] = "public, max-age=1"
        response["X-Accel-Expires"] = expires
        response["Allow"] = ALLOW
        return response

    @classmethod
    def _cached(cls, key: str, shared: bool) -> tuple[float, bytes] | None:
        period = cache_period(time.time())
        hit = cls._local.get(key)
        if hit is not None and cache_period(hit[0]) == period:
            return hit
        if shared:
            hit = cache.get(key)
            if hit is not None and cache_period(hit[0]) == period:
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
            cache.set(key, hit, settings.TOP_CACHE_SECONDS)

    @extend_schema(
        operation_id="boards_top",
        summary="The top of a board",
        parameters=[WINDOW_PARAM, REGION_PARAM, LIMIT_PARAM, OFFSET_PARAM, CURSOR_PARAM],
        responses={200: TopOutSerializer, **PUBLIC_READ_ERRORS},
    )
    def get(self, request: HttpRequest, game: str, board: str) -> HttpResponse:
        cfg, q, window = board_window(game, board, request, TopQuerySerializer)
        cursor = q.get("cursor")
        if cursor is None:
            key = page_key(cfg.id, window, q["offset"], q["limit"])
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
        return self.page_response(hit, expires)


def page_key(board_id: int, window: str, offset: int, limit: int) -> str:
    return f"top:{board_id}:{window}:{offset}:{limit}"
