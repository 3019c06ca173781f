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


def frozen_window_names(board_id: int, *, per_kind: int, region: str = "") -> list[str]:
    """The board's windows (of `region`'s board, without its prefix) with frozen standings, the
    newest `per_kind` of each kind. A board gains a few hundred a year (per region), so one
    DISTINCT over its (board, window, version) index."""
    names = list(
        WindowFreeze.objects.filter(board_id=board_id).order_by("window").values_list("window", flat=True).distinct()
    )
    prefix = f"{region}/" if region else ""
    out: list[str] = []
    for kind in ("daily", "weekly", "monthly", "season"):
        out += [w[len(prefix) :] for w in names if w.startswith(prefix + kind + ":")][-per_kind:]
    return out


def standings_around(freeze: WindowFreeze, *, player_pk: int, around: int) -> list[Standing]:
    """A player's frozen standing and the `around` either side; [] if they are not in it."""
    position = Standing.objects.filter(freeze=freeze, player_id=player_pk).values_list("position", flat=True).first()
    if position is None:
        return []
    return list(
        Standing.objects.filter(freeze=freeze, position__gte=position - around, position__lte=position + around)
        .select_related("player")
        .order_by("position")
    )


def standings_of(freeze: WindowFreeze, *, player_pks: list[int]) -> list[Standing]:
    """The frozen standings of these players (those in it), in their final order."""
    return list(
        Standing.objects.filter(freeze=freeze, player_id__in=player_pks).select_related("player").order_by("position")
    )
