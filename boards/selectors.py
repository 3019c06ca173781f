"""Reads of the boards, in the board order (docs/api.md §6).

Redis orders equal scores by member bytes (player primary keys), but docs/api.md §6's last
tie-break is the player id's byte order. Members with an identical encoded score are rare
(same value reached in the same second), so each read widens its page to whole groups of
identical scores at the edges (page.lua does this in the same round trip) and sorts the
union by (encoded desc, player id bytes).

When Redis is unreachable, top and player reads come from Postgres in the same order and
say so (`degraded`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from boards import index, sharded
from boards.profiles import friend_pks, id_bytes, profiles_of, unknown_members_warn
from boards.types import GROUP_CAP, BoardEntry, FriendEntry, FriendsBoard, Page, PlayerStanding, board_entry
from rediskit import keys
from rediskit.client import REDIS_DOWN, BoardIndexNotBuilt, get_redis
from rediskit.scripts import script
from scores import encoding, selectors
from scores.selectors import BoardConfig, DurableSlice, Profile

log = logging.getLogger(__name__)


@dataclass
class _Slice:
    """A contiguous run of the board in the board order (docs/api.md §6), as read from Redis or Postgres."""

    total: int
    start: int
    rows: list[tuple[int, int]]  # (pk, encoded)
    better: dict[int, int]
    profiles: dict[int, Profile]


# --- assembling entries -------------------------------------------------------------------


def _entry(board: BoardConfig, position: int, pk: int, encoded: int, s: _Slice) -> BoardEntry:
    rank = s.better[encoded >> encoding.TIME_BITS] + 1 if board.rank_display == "shared" else position + 1
    return board_entry(board, position=position, rank=rank, pk=pk, encoded=encoded, profile=s.profiles[pk])


def _entries(board: BoardConfig, s: _Slice, start: int, stop: int) -> list[BoardEntry]:
    return [
        _entry(board, s.start + i, pk, encoded, s)
        for i, (pk, encoded) in enumerate(s.rows)
        if start <= s.start + i <= stop and pk in s.profiles
    ]


def _from_redis(board: BoardConfig, window: str, reply: list[Any]) -> _Slice:
    total, above_first, page, edges, better, _ = reply
    members: dict[int, int] = {}
    for flat in (page, edges):
        for i in range(0, len(flat), 2):
            members[int(flat[i])] = int(float(flat[i + 1]))
    profiles = profiles_of(board, window=window, members=members) if members else {}
    unknown_members_warn(board, window=window, members=members, profiles=profiles)
    if len(set(members.values())) < len(members):  # identical scores: the last tie-break decides
        rows = sorted(members.items(), key=lambda kv: (-kv[1], id_bytes(profiles, pk=kv[0])))
    else:
        rows = sorted(members.items(), key=itemgetter(1), reverse=True)
    return _Slice(
        total=int(total),
        start=int(above_first),
        rows=rows,
        better={int(better[i]): int(better[i + 1]) for i in range(0, len(better), 2)},
        profiles=profiles,
    )


def _from_postgres(s: DurableSlice) -> _Slice:
    return _Slice(total=s.total, start=s.start, rows=s.rows, better=s.better, profiles=s.profiles)


class TokenUnconfirmed(Exception):
    """A read with a token guard (docs/api.md §3.2) that the board script refused: the player's
    tokens of that generation are revoked (`revoked`), or Redis does not hold the player's
    generation (the caller asks Postgres: scores/auth.py player_token_generations)."""

    def __init__(self, revoked: bool) -> None:
        super().__init__("revoked" if revoked else "generation unknown")
        self.revoked = revoked


TokenGuard = tuple[int, int]  # (player pk, the token's generation)


def _guarded(reply: list[Any]) -> list[Any]:
    if reply and reply[0] in (b"revoked", b"tokenunknown"):
        raise TokenUnconfirmed(reply[0] == b"revoked")
    return reply


def _page_script(
    board: BoardConfig,
    window: str,
    *args: Any,
    counters: Sequence[str] = (),
    limits: Sequence[int] = (),
    token: TokenGuard | None = None,
) -> list[Any]:
    r = get_redis()
    guard = [keys.player_tokens_key(token[0])] if token else []
    reply = script("page")(
        keys=[keys.board_key(board.id, window), keys.BUILT_MARKER, *guard, *counters],
        args=[
            *args,
            encoding.TIME_SPAN,
            GROUP_CAP,
            "1" if board.rank_display == "shared" else "0",
            token[1] if token else "",
            *limits,
        ],
        client=r,
    )
    if reply and reply[0] == b"unbuilt":
        raise BoardIndexNotBuilt("the board index is being rebuilt")
    return _guarded(reply)


def standing_reply(
    board: BoardConfig,
    *,
    window: str,
    pk: int,
    around: int,
    counters: Sequence[str],
    limits: Sequence[int],
    token: TokenGuard | None = None,
) -> list[Any]:
    """page.lua's answer for player_standing(..., reply=), with the rate-limit counters
    (PlayerReadThrottle.counters) counted in the same round trip. A one-element list means
    limit number reply[0] refused the request and the board was not read. `token`: a player
    token's guard, checked first in the same round trip (raises TokenUnconfirmed). Raises
    REDIS_DOWN."""
    return _page_script(board, window, "member", pk, around, counters=counters, limits=limits, token=token)


# --- public reads ---------------------------------------------------------------------------


def board_top(board: BoardConfig, *, window: str, offset: int, limit: int) -> Page:
    stop = offset + limit - 1
    try:
        if index.fanout(board.shards):
            return sharded.board_top(board, window, offset, limit)
        s = _from_redis(board, window, _page_script(board, window, "range", offset, stop))
        degraded = False
    except REDIS_DOWN:
        s, degraded = _from_postgres(selectors.durable_range(board, window=window, start=offset, stop=stop)), True
    return Page(window=window, total=s.total, entries=_entries(board, s, offset, stop), degraded=degraded)


def board_range(board: BoardConfig, *, window: str, start: int, stop: int) -> list[BoardEntry]:
    return board_top(board, window=window, offset=start, limit=stop - start + 1).entries


def player_standing(
    board: BoardConfig, *, window: str, pk: int, around: int, reply: list[Any] | None = None
) -> PlayerStanding:
    """`reply`: page.lua's answer already fetched for exactly these arguments (standing_reply)."""
    try:
        if reply is None and index.fanout(board.shards):
            return sharded.player_standing(board, window, pk, around)
        if reply is None:
            reply = _page_script(board, window, "member", pk, around)
        if reply[5] is None or reply[5] is False:
            return PlayerStanding(window, int(reply[0]), None, None, [])
        s = _from_redis(board, window, reply)
        degraded = False
        position = next(s.start + i for i, (member, _) in enumerate(s.rows) if member == pk)
    except REDIS_DOWN:
        position = selectors.durable_position(board, window=window, pk=pk)
        lo = max(0, (position or 0) - around)
        s = _from_postgres(selectors.durable_range(board, window=window, start=lo, stop=(position or 0) + around))
        degraded = True
        if position is None:
            return PlayerStanding(window, s.total, None, None, [], degraded=True)
    entries = _entries(board, s, position - around, position + around)
    me = next((e for e in entries if e.player_id == pk), None)
    if me is None:  # ranked in Redis, but no player row: as a player without a score
        return PlayerStanding(window, s.total, None, None, [], degraded)
    better = s.better[me.encoded >> encoding.TIME_BITS]
    percentile = math.floor((s.total - better) * 10000 / s.total) / 100
    return PlayerStanding(window, s.total, me, percentile, entries, degraded)


def friends_call(
    board: BoardConfig,
    *,
    window: str,
    members: list[int],
    counters: Sequence[str] = (),
    limits: Sequence[int] = (),
    own_list: bool = False,
    token: TokenGuard | None = None,
) -> tuple[list[str], list[Any]]:
    """friends.lua's KEYS and ARGV for friends_reply's arguments (also what `make bench` sends
    the script alone, its raw anchor for the friends read: bench/anchors.py)."""
    script_keys = [keys.board_key(board.id, window), keys.BUILT_MARKER, *counters]
    if token:
        script_keys.append(keys.player_tokens_key(token[0]))
    if own_list:
        script_keys.append(keys.friend_list_key(members[0]))
    shared = "1" if board.rank_display == "shared" else "0"
    prefix = keys.profile_key_prefix(board.id, window)
    guard = token[1] if token else ""
    return script_keys, [encoding.TIME_SPAN, GROUP_CAP, shared, len(counters), prefix, guard, *limits, *members]


def friends_reply(
    board: BoardConfig,
    *,
    window: str,
    members: list[int],
    counters: Sequence[str] = (),
    limits: Sequence[int] = (),
    own_list: bool = False,
    token: TokenGuard | None = None,
) -> list[Any]:
    """friends.lua's answer for these members; with the rate-limit counters (as standing_reply)
    counted in the same round trip, a one-element list meaning limit number reply[0] refused
    the request. `own_list`: members is [the player], and the script reads the player's
    cached friend list itself (keys.friend_list_key), so the whole read is one round trip; a
    list not cached is loaded (profiles.friend_pks) and the board read once more with it, the
    limits not counted again. `token`: as standing_reply's. Raises REDIS_DOWN."""
    script_keys, script_args = friends_call(
        board, window=window, members=members, counters=counters, limits=limits, own_list=own_list, token=token
    )
    reply = _guarded(script("friends")(keys=script_keys, args=script_args, client=get_redis()))
    if reply and reply[0] == b"unbuilt":
        raise BoardIndexNotBuilt("the board index is being rebuilt")
    if reply and reply[0] == b"nolist":
        return friends_reply(board, window=window, members=[members[0], *friend_pks(members[0])])
    return reply


def _friends_from_redis(
    board: BoardConfig, window: str, reply: list[Any]
) -> tuple[dict[int, tuple[int, int, int]], dict[int, Profile]]:
    found: dict[int, tuple[int, int, int, list[bytes]]] = {}
    wanted: dict[int, int] = {}
    fetched: dict[int, bytes | None] = {}
    tied = False
    for i in range(0, len(reply), 6):
        m, encoded, above, better, group, raw = reply[i : i + 6]  # integers but the last two
        fetched[m] = raw
        found[m] = (encoded, above, better, group)
        wanted[m] = encoded
        tied = tied or bool(group)
    if tied:
        for encoded, _, _, group in found.values():
            for g in group:
                wanted.setdefault(int(g), encoded)
    profiles = profiles_of(board, window=window, members=wanted, fetched=fetched) if wanted else {}
    if len(profiles) < len(wanted):
        unknown_members_warn(board, window=window, members=wanted, profiles=profiles)
    standings = {}
    for m, (encoded, above, better, group) in found.items():
        profile = profiles.get(m)
        if profile is None:
            continue
        if group:  # identical scores: the player id's bytes break the tie
            mine = profile.external_id.encode()
            above += sum(1 for g in group if id_bytes(profiles, pk=int(g)) < mine)
        standings[m] = (encoded, above, better)
    return standings, profiles


def friends_board(
    board: BoardConfig, *, window: str, pk: int, members: list[int] | None = None, reply: list[Any] | None = None
) -> FriendsBoard:
    """The player and their friends with a score in the window, ordered as on the board
    (friends_ranked's rows as entries)."""
    rows, degraded = friends_ranked(board, window=window, pk=pk, members=members, reply=reply)
    out = [
        FriendEntry(
            rank=rank,
            board_rank=board_rank,
            entry=board_entry(board, position=position, rank=board_rank, pk=m, encoded=encoded, profile=profile),
        )
        for rank, board_rank, m, position, encoded, profile in rows
    ]
    return FriendsBoard(window, out, degraded)


def friends_ranked(
    board: BoardConfig, *, window: str, pk: int, members: list[int] | None = None, reply: list[Any] | None = None
) -> tuple[list[FriendRow], bool]:
    """The player and their friends with a score in the window, ordered as on the board, as
    plain tuples (no entry objects per friend), and whether Postgres answered (Redis down).
    `members`: [pk, *friend_pks(pk)] when the caller has it; `reply`: friends.lua's answer
    already fetched for them (friends_reply). Neither: on one Redis, one friends.lua round
    trip that reads the friend list too."""
    try:
        if reply is None and members is None and not index.fanout(board.shards):
            reply = friends_reply(board, window=window, members=[pk], own_list=True)
        if reply is not None:
            standings, profiles = _friends_from_redis(board, window, reply)
        else:
            members = [pk, *friend_pks(pk)] if members is None else members
            standings, profiles = member_standings(board, window=window, members=members)
        degraded = False
    except REDIS_DOWN:
        members = [pk, *friend_pks(pk)] if members is None else members
        standings, profiles = selectors.durable_standings(board, window=window, pks=members)
        degraded = True
    return _friends_ranked(board, standings, profiles), degraded


# (rank among friends, board rank, pk, 0-based board position, encoded, profile)
FriendRow = tuple[int, int, int, int, int, Profile]


def _friends_ranked(
    board: BoardConfig, standings: dict[int, tuple[int, int, int]], profiles: dict[int, Profile]
) -> list[FriendRow]:
    ordered = sorted(standings.items(), key=lambda kv: kv[1][1])
    if board.rank_display != "shared":
        return [
            (i + 1, position + 1, m, position, encoded, profiles[m])
            for i, (m, (encoded, position, _)) in enumerate(ordered)
        ]
    # shared ranks among friends: 1 + how many of them have a strictly better value; the
    # parts in descending order, so the first index of each part is that count (ascending
    # boards' encodings run the same way: a better value is always a higher part)
    bits = encoding.TIME_BITS
    first_of: dict[int, int] = {}
    for i, part in enumerate(sorted((s[0] >> bits for _, s in ordered), reverse=True)):
        first_of.setdefault(part, i)
    return [
        (first_of[encoded >> bits] + 1, better + 1, m, position, encoded, profiles[m])
        for m, (encoded, position, better) in ordered
    ]


def member_standings(
    board: BoardConfig, *, window: str, members: list[int]
) -> tuple[dict[int, tuple[int, int, int]], dict[int, Profile]]:
    if index.fanout(board.shards):
        return sharded.standings(board, window, members)
    return _friends_from_redis(board, window, friends_reply(board, window=window, members=members))


def board_size(board_id: int, *, window: str) -> int:
    shards = index.shards_of(board_id)
    if index.fanout(shards):
        return sum(int(x) for x in index.batch([("zcard", k) for k in keys.shard_keys(board_id, window, shards)]))
    return get_redis().zcard(keys.board_key(board_id, window))


def standings_of(board: BoardConfig, *, window: str, pks: list[int]) -> dict[int, BoardEntry]:
    """Where each of these players stands (those with a score in the window), as board reads
    rank them: one friends.lua round trip, or Postgres when Redis is down."""
    if not pks:
        return {}
    try:
        standings, profiles = member_standings(board, window=window, members=pks)
    except REDIS_DOWN:
        standings, profiles = selectors.durable_standings(board, window=window, pks=pks)
    shared = board.rank_display == "shared"
    out = {}
    for pk, (encoded, position, better) in standings.items():
        rank = better + 1 if shared else position + 1
        out[pk] = board_entry(board, position=position, rank=rank, pk=pk, encoded=encoded, profile=profiles[pk])
    return out
