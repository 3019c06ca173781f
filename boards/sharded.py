"""Reads on the fan-out path (boards/index.fanout): a board whose windows are spread over
several sorted sets (`shards`), and every board on a Redis Cluster. See docs/reads.md
("Sharded boards").

Each read asks every shard of the window in one pipeline (rediskit/lua/shard.lua, one key per
call, so one slot), together with the index's built marker, and merges the answers in the
board order of docs/api.md §6:

- top and paging: each shard's prefix 0..stop (with the whole group of identical scores at
  its end). A member missing from the merge has, in its shard, stop + 1 members ahead of it,
  so the merge's first stop + 1 entries are the board's positions 0..stop exactly.
- a player's rank: 1 + the members with a greater score on every shard + the members with the
  identical score whose player id sorts first; the neighbours are the `around` closest scores
  above and below on each shard, merged. Beyond the board's exact_rank_limit a read without
  neighbours (around=0) is answered from the window's histogram: rank_exact false, and
  rank_error = the count of the histogram bucket holding the value (the histogram's own bound)
  + the member writes the window's shards took since the histogram was built (each moves a
  true rank by at most one).
- friends: one ZMSCORE per shard, then one shard.lua call per shard counting, for each found
  score, who is ahead.
"""

from __future__ import annotations

import math
from typing import Any

from boards import histogram, index
from boards.profiles import id_bytes, profiles_of, unknown_members_warn
from boards.types import GROUP_CAP, Page, PlayerStanding, board_entry
from rediskit import keys
from rediskit.client import IndexMoving
from scores import encoding
from scores.selectors import BoardConfig, Profile


def _flat(flat: list[Any]) -> list[tuple[int, int]]:
    return [(int(flat[i]), int(float(flat[i + 1]))) for i in range(0, len(flat), 2)]


def _shard_call(key: str, mode: str, *args: Any) -> tuple:
    return ("script", "shard", [key], [mode, GROUP_CAP, encoding.TIME_SPAN, *args])


def _marker() -> tuple:
    return ("exists", keys.BUILT_MARKER)


def _order(board: BoardConfig, window: str, members: dict[int, int]) -> tuple[list[tuple[int, int]], dict]:
    profiles = profiles_of(board, window=window, members=members) if members else {}
    unknown_members_warn(board, window=window, members=members, profiles=profiles)
    rows = sorted(members.items(), key=lambda kv: (-kv[1], id_bytes(profiles, pk=kv[0])))
    return rows, profiles


def _part(encoded: int) -> int:
    return encoded >> encoding.TIME_BITS


def board_top(board: BoardConfig, window: str, offset: int, limit: int) -> Page:
    stop = offset + limit - 1
    set_keys = keys.shard_keys(board.id, window, board.shards)
    replies = index.batch([_marker(), *(_shard_call(k, "top", stop) for k in set_keys)], replicas=True)
    index.built_or_raise(replies[0])
    total = 0
    members: dict[int, int] = {}
    for shard_total, page, edge in replies[1:]:
        total += int(shard_total)
        members.update(_flat(page))
        members.update(_flat(edge))
    rows, profiles = _order(board, window, members)
    shared = board.rank_display == "shared"
    first_of_part: dict[int, int] = {}
    entries = []
    for position, (pk, encoded) in enumerate(rows[: stop + 1]):
        first_of_part.setdefault(_part(encoded), position)
        if position < offset or pk not in profiles:
            continue
        rank = first_of_part[_part(encoded)] + 1 if shared else position + 1
        entries.append(board_entry(board, position=position, rank=rank, pk=pk, encoded=encoded, profile=profiles[pk]))
    return Page(window=window, total=total, entries=entries)


def _estimate(board: BoardConfig, raw: Any, encoded: int, changes: int) -> tuple[int, int] | None:
    """(rank, error bound) from the window's stored histogram, None without one."""
    if raw is None:
        return None
    found = histogram.Histogram.from_json(raw)
    if not found.buckets:
        return None
    value = encoding.decode_value(board, encoded)
    rank = histogram.approximate_rank(found, value)
    bucket = next((b.count for b in found.buckets if b.min <= value <= b.max), 0)
    return rank, bucket + max(0, changes - found.changes)


# The player's value is read in one round trip and the shards are asked around it in the next:
# a fold in between moves the player off that value, and the second reply no longer holds them.
# Reading again settles it (a player's value changes once per fold at most, folds are
# milliseconds apart); past this many tries, the read is answered from Postgres.
MOVED_TRIES = 5


def player_standing(board: BoardConfig, window: str, pk: int, around: int) -> PlayerStanding:
    for _ in range(MOVED_TRIES):
        standing = _player_standing_once(board, window, pk, around)
        if standing is not None:
            return standing
    raise IndexMoving(f"player {pk}'s value on board {board.id} {window} moved under {MOVED_TRIES} reads")


def _player_standing_once(board: BoardConfig, window: str, pk: int, around: int) -> PlayerStanding | None:
    """The player's standing, or None when their value moved between the two round trips."""
    set_keys = keys.shard_keys(board.id, window, board.shards)
    own = keys.player_key(board.id, window, board.shards, pk)
    sharded = len(set_keys) > 1
    ops: list[tuple] = [_marker(), ("zscore", own, str(pk)), *(("zcard", k) for k in set_keys)]
    if sharded:
        ops += [("get", keys.changes_key(k)) for k in set_keys]
        ops.append(("hget", keys.histogram_key(board.id, window), "body"))
    replies = index.batch(ops)
    index.built_or_raise(replies[0])
    n = len(set_keys)
    total = sum(int(x) for x in replies[2 : 2 + n])
    if replies[1] is None:
        return PlayerStanding(window, total, None, None, [])
    encoded = int(float(replies[1]))
    if sharded and around == 0:
        changes = sum(int(x or 0) for x in replies[2 + n : 2 + 2 * n])
        estimate = _estimate(board, replies[-1], encoded, changes)
        if estimate is not None and estimate[0] - estimate[1] > board.exact_rank_limit:
            return _estimated(board, window, pk, encoded, total, *estimate)
    return _exact(board, window, pk, encoded, around, set_keys)


def _estimated(
    board: BoardConfig, window: str, pk: int, encoded: int, total: int, rank: int, error: int
) -> PlayerStanding:
    profiles = profiles_of(board, window=window, members={pk: encoded})
    if pk not in profiles:
        return PlayerStanding(window, total, None, None, [])
    rank = max(1, min(rank, total))
    me = board_entry(board, position=rank - 1, rank=rank, pk=pk, encoded=encoded, profile=profiles[pk])
    percentile = math.floor((total - (rank - 1)) * 10000 / total) / 100
    return PlayerStanding(window, total, me, percentile, [me], rank_exact=False, rank_error=error)


def _exact(
    board: BoardConfig, window: str, pk: int, encoded: int, around: int, set_keys: list[str]
) -> PlayerStanding | None:
    replies = index.batch([_shard_call(k, "near", str(encoded), around) for k in set_keys])
    total = above = better = 0
    equal: set[int] = set()
    up: dict[int, int] = {}
    down: dict[int, int] = {}
    for shard_total, shard_above, shard_better, eq, u, u_edge, d, d_edge in replies:
        total += int(shard_total)
        above += int(shard_above)
        better += int(shard_better)
        equal.update(int(m) for m in eq)
        up.update(_flat(u))
        up.update(_flat(u_edge))
        down.update(_flat(d))
        down.update(_flat(d_edge))
    if pk not in equal:  # no longer at `encoded`: their value moved since it was read
        return None
    members = {**up, **down, **dict.fromkeys(equal, encoded)}
    profiles = profiles_of(board, window=window, members=members)
    unknown_members_warn(board, window=window, members=members, profiles=profiles)
    if pk not in profiles:  # ranked in Redis, but no player row: as a player without a score
        return PlayerStanding(window, total, None, None, [])
    key = lambda kv: (-kv[1], id_bytes(profiles, pk=kv[0]))  # noqa: E731
    ties = sorted(((m, encoded) for m in equal), key=key)
    mine = next(i for i, (m, _) in enumerate(ties) if m == pk)
    position = above + mine
    before = (sorted(up.items(), key=key) + ties[:mine])[-around:] if around else []
    after = (ties[mine + 1 :] + sorted(down.items(), key=key))[:around]
    rows = [*before, (pk, encoded), *after]
    first = position - len(before)
    better_of = {_part(encoded): better}
    if board.rank_display == "shared":
        better_of.update(_better_counts(set_keys, {_part(e) for _, e in rows} - better_of.keys()))
    entries = []
    for i, (m, e) in enumerate(rows):
        if m not in profiles:
            continue
        rank = better_of[_part(e)] + 1 if board.rank_display == "shared" else first + i + 1
        entries.append(board_entry(board, position=first + i, rank=rank, pk=m, encoded=e, profile=profiles[m]))
    me = next(e for e in entries if e.player_id == pk)
    percentile = math.floor((total - better) * 10000 / total) / 100
    return PlayerStanding(window, total, me, percentile, entries)


def _better_counts(set_keys: list[str], parts: set[int]) -> dict[int, int]:
    """How many members have a strictly better value than each value part, over all shards."""
    ordered = sorted(parts)
    span = encoding.TIME_SPAN
    replies = index.batch([("zcount", k, (p + 1) * span, "+inf") for p in ordered for k in set_keys])
    n = len(set_keys)
    return {p: sum(int(x) for x in replies[i * n : (i + 1) * n]) for i, p in enumerate(ordered)}


def standings(
    board: BoardConfig, window: str, members: list[int]
) -> tuple[dict[int, tuple[int, int, int]], dict[int, Profile]]:
    """member -> (encoded, 0-based position, members with a better value) for the members with
    a score, and their profiles: as selectors._friends_from_redis answers on one set."""
    by_key: dict[str, list[int]] = {}
    for m in dict.fromkeys(members):
        by_key.setdefault(keys.player_key(board.id, window, board.shards, m), []).append(m)
    shard_keys = list(by_key)
    replies = index.batch([_marker(), *(("zmscore", k, [str(m) for m in by_key[k]]) for k in shard_keys)])
    index.built_or_raise(replies[0])
    found: dict[int, int] = {}
    for k, scores in zip(shard_keys, replies[1:], strict=True):
        for m, score in zip(by_key[k], scores, strict=True):
            if score is not None:
                found[m] = int(float(score))
    if not found:
        return {}, {}
    scores = sorted(set(found.values()))
    set_keys = keys.shard_keys(board.id, window, board.shards)
    # better values only where ranks are shared: elsewhere the position alone ranks (as
    # friends.lua answers better 0 on one Redis)
    mode = "counts" if board.rank_display == "shared" else "places"
    counted = index.batch([_shard_call(k, mode, *map(str, scores)) for k in set_keys])
    above = dict.fromkeys(scores, 0)
    better = dict.fromkeys(scores, 0)
    ties: dict[int, set[int]] = {s: set() for s in scores}
    for per_shard in counted:
        for s, (a, b, eq) in zip(scores, per_shard, strict=True):
            above[s] += int(a)
            better[s] += int(b)
            ties[s].update(int(m) for m in eq)
    wanted = dict(found)
    for s, group in ties.items():
        for m in group:
            wanted.setdefault(m, s)
    profiles = profiles_of(board, window=window, members=wanted)
    unknown_members_warn(board, window=window, members=wanted, profiles=profiles)
    out = {}
    for m, e in found.items():
        if m not in profiles:
            continue
        mine = profiles[m].external_id.encode()
        tied_before = sum(1 for g in ties[e] if g != m and id_bytes(profiles, pk=g) < mine)
        out[m] = (e, above[e] + tied_before, better[e])
    return out, profiles
