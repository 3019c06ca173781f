"""Deep paging (docs/api.md §5.3; docs/reads.md, "Deep paging"): `top?cursor=...` continues after
the last entry of the page that gave the cursor, at any depth.

A cursor is a position in the board order (docs/api.md §6), not an offset: the encoded score
and the player id of the last entry it saw. The next page is every member strictly after that
position, which each sorted set answers in O(log N + page) (rediskit/lua/after.lua: a ZCOUNT
for the members ahead, the group with the cursor's own score, then ZREVRANGEBYSCORE with an
exclusive bound). A player whose value did not change stays on the same side of the cursor,
so across pages they are listed exactly once; one whose value changed may appear twice or not
at all, as on any board that moves while it is read.

Sharded boards and the Cluster: each shard answers its own page after the cursor (with the
whole group of identical scores at its end), and the merge's first `limit` members are the
board's next `limit` (a member missing from the merge has `limit` members of its own shard
ahead of it). Ranks stay exact: the members ahead of the cursor are summed over the shards.
"""

from __future__ import annotations

import re

from boards import index
from boards.profiles import id_bytes, profiles_of, unknown_members_warn
from boards.types import GROUP_CAP, BoardEntry, Page, board_entry
from rediskit import keys
from rediskit.client import REDIS_DOWN
from scores import encoding, selectors
from scores.ids import PLAYER_RE
from scores.selectors import BoardConfig, Profile

Cursor = tuple[int, str]  # (encoded score, player id) of the last entry seen

# A cursor is `<encoded score in lowercase hex, no leading zero>.<player id>` (the score has no
# "." to split on; the id may). Plain text, so that one pattern states exactly the cursors this
# service accepts, which are exactly those it hands out (the OpenAPI schema's, boards/api/common.py).
# Hex, not decimal: an encoded score is below 2**53, 14 hex digits of which the first is 0 or 1.
assert encoding.EXACT_BITS == 53, "CURSOR_RE bounds the score to 2**53"
CURSOR_RE = rf"^(0|[1-9a-f][0-9a-f]{{0,12}}|1[0-9a-f]{{13}})\.({PLAYER_RE[1:-1]})$"
_CURSOR = re.compile(CURSOR_RE[1:-1])


class BadCursor(ValueError):
    pass


def cursor_encode(entry: BoardEntry) -> str:
    return cursor_at(entry.encoded, entry.external_id)


def cursor_at(encoded: int, external_id: str) -> str:
    """The cursor that continues after the position (encoded score, player id)."""
    return f"{encoded:x}.{external_id}"


def cursor_decode(text: str) -> Cursor:
    """The position a cursor names; BadCursor for anything not of CURSOR_RE's form, which is
    every cursor this service hands out and nothing else."""
    found = _CURSOR.fullmatch(text)
    if found is None:
        raise BadCursor("not a cursor of this board")
    return int(found[1], 16), found[2]


def next_cursor(page: Page) -> str | None:
    """The cursor after a page's last entry; None when nothing follows it."""
    if not page.entries:
        return None
    last = page.entries[-1]
    return cursor_encode(last) if last.position + 1 < page.total else None


def board_after(board: BoardConfig, *, window: str, cursor: Cursor, limit: int) -> Page:
    """The `limit` entries after the cursor's position; from Postgres (degraded) while Redis is
    unreachable."""
    encoded, player = cursor
    try:
        return _from_index(board, window, encoded, player, limit)
    except REDIS_DOWN:
        s = selectors.durable_after(board, window=window, encoded=encoded, player=player, count=limit)
        entries = []
        for i, (pk, e) in enumerate(s.rows):
            rank = s.better[e >> encoding.TIME_BITS] + 1 if board.rank_display == "shared" else s.start + i + 1
            entries.append(
                board_entry(board, position=s.start + i, rank=rank, pk=pk, encoded=e, profile=s.profiles[pk])
            )
        return Page(window=window, total=s.total, entries=entries, degraded=True)


def _flat(flat: list) -> dict[int, int]:
    return {int(flat[i]): int(float(flat[i + 1])) for i in range(0, len(flat), 2)}


def _from_index(board: BoardConfig, window: str, encoded: int, player: str, limit: int) -> Page:
    shared = board.rank_display == "shared"
    args = [str(encoded), limit, GROUP_CAP, encoding.TIME_SPAN, "1" if shared else "0"]
    set_keys = keys.shard_keys(board.id, window, board.shards)
    replies = index.batch(
        [("exists", keys.BUILT_MARKER), *(("script", "after", [k], args) for k in set_keys)], replicas=True
    )
    index.built_or_raise(replies[0])
    total = above = 0
    equal: dict[int, int] = {}
    members: dict[int, int] = {}
    better: dict[int, int] = {}
    for shard_total, shard_above, shard_equal, page, edge, shard_better in replies[1:]:
        total += int(shard_total)
        above += int(shard_above)
        equal.update(_flat(shard_equal))
        members.update(_flat(page))
        members.update(_flat(edge))
        for i in range(0, len(shard_better), 2):
            part = int(shard_better[i])
            better[part] = better.get(part, 0) + int(shard_better[i + 1])
    profiles: dict[int, Profile] = profiles_of(board, window=window, members={**equal, **members})
    unknown_members_warn(board, window=window, members={**equal, **members}, profiles=profiles)
    mine = player.encode()
    # the cursor's own score: members up to its player id are behind us, the rest come first
    behind = [pk for pk in equal if id_bytes(profiles, pk=pk) <= mine]
    after = {pk: e for pk, e in equal.items() if id_bytes(profiles, pk=pk) > mine}
    rows = sorted({**members, **after}.items(), key=lambda kv: (-kv[1], id_bytes(profiles, pk=kv[0])))[:limit]
    start = above + len(behind)
    if shared and len(set_keys) > 1 and rows:
        # a value's better players are on every shard: count them there (one more round trip)
        better = _better_on_shards(set_keys, {e >> encoding.TIME_BITS: e for _, e in rows})
    entries = []
    for i, (pk, e) in enumerate(rows):
        if pk not in profiles:
            continue
        rank = better.get(e >> encoding.TIME_BITS, 0) + 1 if shared else start + i + 1
        entries.append(board_entry(board, position=start + i, rank=rank, pk=pk, encoded=e, profile=profiles[pk]))
    return Page(window=window, total=total, entries=entries)


def _better_on_shards(set_keys: list[str], by_part: dict[int, int]) -> dict[int, int]:
    scores = [str(e) for e in by_part.values()]
    replies = index.batch(
        [("script", "shard", [k], ["counts", GROUP_CAP, encoding.TIME_SPAN, *scores]) for k in set_keys]
    )
    better = dict.fromkeys(by_part, 0)
    for reply in replies:
        for part, (_, shard_better, _) in zip(by_part, reply, strict=True):
            better[part] += int(shard_better)
    return better
