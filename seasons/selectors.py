"""Reads of frozen standings."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, Q
from django.db.models.functions import Coalesce

from leaderboard_project.replicas import read_connection
from scores.selectors import BoardConfig
from seasons.models import FrozenStanding, StandingChange, WindowFreeze


def frozen_windows(pairs: Iterable[tuple[int, str]]) -> set[tuple[int, str]]:
    """Which of these (board_id, window) pairs have frozen standings."""
    pairs = list(pairs)
    if not pairs:
        return set()
    boards, windows = zip(*pairs, strict=True)
    with read_connection().cursor() as cur:
        cur.execute(
            """
            SELECT DISTINCT f.board_id, f."window"
            FROM unnest(%s::bigint[], %s::text[]) AS u(b, w)
            JOIN seasons_windowfreeze f ON f.board_id = u.b AND f."window" = u.w
            """,
            [list(boards), list(windows)],
        )
        return set(cur.fetchall())


def latest_freeze(board_id: int, *, window: str) -> WindowFreeze | None:
    return WindowFreeze.objects.filter(board_id=board_id, window=window).order_by("-version").first()


def standings_page(freeze: WindowFreeze, *, offset: int, limit: int) -> list[FrozenStanding]:
    return list(
        FrozenStanding.objects.filter(freeze=freeze, position__gt=offset, position__lte=offset + limit)
        .select_related("player")
        .order_by("position")
    )


def freeze_of(board_id: int, *, window: str, version: int | None = None) -> WindowFreeze | None:
    """A window's frozen standings: the given version, or the latest."""
    if version is None:
        return latest_freeze(board_id, window=window)
    return WindowFreeze.objects.filter(board_id=board_id, window=window, version=version).first()


def standings_rows(freeze: WindowFreeze, *, chunk: int = 5000) -> Iterator[tuple]:
    """A frozen version's standings in order: (position, rank, player id, display name, value, reached_at,
    encoded)."""
    return (
        FrozenStanding.objects.filter(freeze=freeze)
        .order_by("position")
        .values_list(
            "position", "rank", "player__external_id", "player__display_name", "value", "reached_at", "encoded"
        )
        .iterator(chunk)
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


def standings_around(freeze: WindowFreeze, *, player_pk: int, around: int) -> list[FrozenStanding]:
    """A player's frozen standing and the `around` either side; [] if they are not in it."""
    position = (
        FrozenStanding.objects.filter(freeze=freeze, player_id=player_pk).values_list("position", flat=True).first()
    )
    if position is None:
        return []
    return list(
        FrozenStanding.objects.filter(freeze=freeze, position__gte=position - around, position__lte=position + around)
        .select_related("player")
        .order_by("position")
    )


def standings_of(freeze: WindowFreeze, *, player_pks: list[int]) -> list[FrozenStanding]:
    """The frozen standings of these players (those in it), in their final order."""
    return list(
        FrozenStanding.objects.filter(freeze=freeze, player_id__in=player_pks)
        .select_related("player")
        .order_by("position")
    )


@dataclass(frozen=True)
class Move:
    """A player whose frozen standing differs between a version and the one before it."""

    player_id: int
    player: str
    display_name: str
    old_position: int | None  # None: not in the earlier version
    new_position: int | None  # None: gone from this version (their results were voided)
    old_rank: int | None
    new_rank: int | None
    old_value: int | None
    new_value: int | None


def freeze_moves(freeze: WindowFreeze, *, limit: int = 200) -> tuple[int, list[Move]]:
    """How many players moved since the previous version, and the first `limit` of them: those
    whose own value changed first, then by position."""
    previous = (
        WindowFreeze.objects.filter(board_id=freeze.board_id, window=freeze.window, version__lt=freeze.version)
        .order_by("-version")
        .first()
    )
    changes = StandingChange.objects.filter(freeze=freeze)
    count = changes.count()
    if previous is None or not count:
        return count, []
    picked = list(
        changes.select_related("player")
        .annotate(value_changed=Q(old_value__isnull=True) | Q(new_value__isnull=True) | ~Q(old_value=F("new_value")))
        .order_by("-value_changed", Coalesce("new_rank", "old_rank"), "player_id")[:limit]
    )
    players = [c.player_id for c in picked]
    new = dict(FrozenStanding.objects.filter(freeze=freeze, player_id__in=players).values_list("player_id", "position"))
    old = dict(
        FrozenStanding.objects.filter(freeze=previous, player_id__in=players).values_list("player_id", "position")
    )
    return count, [
        Move(
            c.player_id,
            c.player.external_id,
            c.player.display_name,
            old.get(c.player_id),
            new.get(c.player_id),
            c.old_rank,
            c.new_rank,
            c.old_value,
            c.new_value,
        )
        for c in picked
    ]


@dataclass(frozen=True)
class ArchivedWindow:
    """A frozen window of a board: its latest standings version and when it was first frozen."""

    window: str  # without the region prefix
    latest: WindowFreeze
    first_frozen_at: datetime

    @property
    def corrected(self) -> bool:
        return self.latest.version > 1


def archived_windows(board_id: int, *, region: str = "") -> list[ArchivedWindow]:
    """Every frozen window of a board (of `region`'s board), newest first within each kind. One
    query over the board's freezes: a few hundred a year per region."""
    prefix = f"{region}/" if region else ""
    by_window: dict[str, list[WindowFreeze]] = {}
    for f in WindowFreeze.objects.filter(board_id=board_id).order_by("window", "version"):
        if region and not f.window.startswith(prefix):
            continue
        if not region and "/" in f.window:
            continue
        by_window.setdefault(f.window, []).append(f)
    out = [ArchivedWindow(w[len(prefix) :], fs[-1], fs[0].frozen_at) for w, fs in by_window.items()]
    order = {"season": 0, "monthly": 1, "weekly": 2, "daily": 3}
    out.sort(key=lambda a: a.latest.frozen_at, reverse=True)
    out.sort(key=lambda a: order.get(a.window.split(":", 1)[0], 9))
    return out


def standings_at(
    freeze_ids: list[int], *, position: int | None = None, player_pk: int | None = None
) -> dict[int, FrozenStanding]:
    """freeze id -> the standing at `position`, or of `player_pk`, in each of these freezes."""
    if not freeze_ids:
        return {}
    rows = FrozenStanding.objects.filter(freeze_id__in=freeze_ids).select_related("player")
    rows = rows.filter(position=position) if position is not None else rows.filter(player_id=player_pk)
    return {s.freeze_id: s for s in rows}


def first_frozen_at(freeze: WindowFreeze) -> datetime | None:
    """When a window's standings were first frozen (version 1), for a corrected version."""
    return (
        WindowFreeze.objects.filter(board_id=freeze.board_id, window=freeze.window, version=1)
        .values_list("frozen_at", flat=True)
        .first()
    )


@dataclass(frozen=True)
class FrozenPart:
    """A part of a frozen board window that an app above this one freezes on its own (a league
    group: docs/competitions.md, "Leagues"), read through the standings read as a window is:
    its latest version, and its standings (objects with rank, position, player, value,
    reached_at and encoded, as FrozenStanding has) page by page."""

    version: int
    frozen_at: datetime
    total: int
    page: Callable[[int, int], list[Any]]  # (offset, limit) -> standings in order


# `?group=<id>` of the standings read: (board, window, group) -> the part, or None when the
# board has no such group frozen in that window. Registered from the app's AppConfig.ready();
# seasons imports none of it.
FrozenPartReader = Callable[..., FrozenPart | None]  # (board, *, window, group, version=None: the latest)
_part_readers: dict[str, FrozenPartReader] = {}


def frozen_part_register(reader: FrozenPartReader, *, uid: str) -> None:
    _part_readers[uid] = reader


def frozen_part(board: BoardConfig, *, window: str, group: str, version: int | None = None) -> FrozenPart | None:
    """The part's latest frozen version, or its `version`."""
    for reader in _part_readers.values():
        found = reader(board, window=window, group=group, version=version)
        if found is not None:
            return found
    return None
