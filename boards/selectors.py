"""Reads of the sorted sets.

Redis orders equal scores by member bytes (player primary keys), but the contract's last
tie-break is the player id's byte order. Members with an identical encoded score are rare
(same value reached in the same second), so the fix is applied only to those groups: the
page is widened to whole groups at its edges and sorted by (encoded desc, player id)."""

from __future__ import annotations

from dataclasses import dataclass

from boards import keys
from boards.redis import get_redis
from scores.models import Player


@dataclass(frozen=True)
class RankedEntry:
    position: int  # 0-based position in the section 6 order
    player_id: int
    external_id: str
    display_name: str
    encoded: int


def _players(ids: set[int]) -> dict[int, tuple[str, str]]:
    return {
        pk: (ext, name)
        for pk, ext, name in Player.objects.filter(pk__in=ids).values_list("pk", "external_id", "display_name")
    }


def board_size(board_id: int, window: str) -> int:
    return get_redis().zcard(keys.board_key(board_id, window))


def board_range(board_id: int, window: str, start: int, stop: int) -> list[RankedEntry]:
    """Entries at 0-based positions start..stop (inclusive), in the contract's order."""
    r = get_redis()
    key = keys.board_key(board_id, window)
    page = r.zrevrange(key, start, stop, withscores=True)
    if not page:
        return []
    edge_scores = {page[0][1], page[-1][1]}
    pipe = r.pipeline(transaction=False)
    for score in edge_scores:
        pipe.zrangebyscore(key, score, score, withscores=True)
    pipe.zcount(key, f"({page[0][1]!r}", "+inf")
    *groups, above_first = pipe.execute()
    members = {int(m): int(s) for m, s in page}
    for group in groups:
        members.update({int(m): int(s) for m, s in group})
    players = _players(set(members))
    ordered = sorted(members.items(), key=lambda kv: (-kv[1], players[kv[0]][0].encode()))
    return [
        RankedEntry(above_first + i, pk, players[pk][0], players[pk][1], encoded)
        for i, (pk, encoded) in enumerate(ordered)
        if start <= above_first + i <= stop
    ]
