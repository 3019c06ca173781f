"""What a board read returns: the types boards/selectors.py (one sorted set per window) and
boards/sharded.py (a board over several sets, or a Redis Cluster) both build, and the callers
(the API, the pages, live updates) read. Imports nothing of boards/, so the two readers share it
without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scores import encoding
from scores.selectors import BoardConfig, Profile

GROUP_CAP = 10_000  # members fetched per group of identical scores (see docs/reads.md)


@dataclass(frozen=True)
class BoardEntry:
    """One player's row on a board window."""

    position: int  # 0-based, in the board's order
    rank: int  # as displayed: position + 1, or the competition rank on shared boards
    player_id: int
    external_id: str
    display_name: str
    value: int
    encoded: int
    metadata: dict[str, Any] | None
    # the value's sub-scores by name (docs/api.md §2.3); None on a board that declares none
    subscores: dict[str, int] | None = None


def board_entry(board: BoardConfig, *, position: int, rank: int, pk: int, encoded: int, profile: Profile) -> BoardEntry:
    value = encoding.decode_value(board, encoded)
    subs = encoding.decode_subscores(board, encoded) if board.subscores else None
    return BoardEntry(
        position, rank, pk, profile.external_id, profile.display_name, value, encoded, profile.metadata, subs
    )


@dataclass(frozen=True)
class Page:
    window: str
    total: int
    entries: list[BoardEntry]
    degraded: bool = False


@dataclass(frozen=True)
class PlayerStanding:
    """Where one player stands on a board window, with their neighbours."""

    window: str
    total: int
    me: BoardEntry | None  # None: the player has no value in this window
    percentile: float | None
    around: list[BoardEntry]
    degraded: bool = False
    rank_exact: bool = True  # False: estimated from the histogram (sharded boards, deep ranks)
    rank_error: int = 0  # |rank - true rank| <= rank_error


@dataclass(frozen=True)
class FriendEntry:
    rank: int  # among the player and their friends
    board_rank: int
    entry: BoardEntry


@dataclass(frozen=True)
class FriendsBoard:
    window: str
    entries: list[FriendEntry]
    degraded: bool = False
