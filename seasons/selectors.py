"""Reads of frozen standings."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from seasons.models import Standing, WindowFreeze


def frozen_windows(pairs: Iterable[tuple[int, str]]) -> set[tuple[int, str]]:
    """Which of these (board_id, window) pairs have frozen standings."""
    pairs = list(pairs)
    if not pairs:
        return set()
    boards, windows = zip(*pairs, strict=True)
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT DISTINCT f.board_id, f."window"
            FROM unnest(%s::bigint[], %s::text[]) AS u(b, w)
            JOIN seasons_windowfreeze f ON f.board_id = u.b AND f."window" = u.w
            """,
            [list(boards), list(windows)],
        )
        return set(cur.fetchall())


def latest_freeze(board_id: int, window: str) -> WindowFreeze | None:
    return WindowFreeze.objects.filter(board_id=board_id, window=window).order_by("-version").first()


def standings_page(freeze: WindowFreeze, offset: int, limit: int) -> list[Standing]:
    return list(
        Standing.objects.filter(freeze=freeze, position__gt=offset, position__lte=offset + limit)
        .select_related("player")
        .order_by("position")
    )
