"""Who a board's members are, cached: player ids, friend lists and profiles (display name,
metadata) per board window. Per-process caches sit in front of the shared cache, so a hot
player's rank read needs no cache round trip at all; the durable reads are scores.selectors'."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterable

from django.core.cache import cache

from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis
from scores import selectors
from scores.selectors import BoardConfig, Profile

log = logging.getLogger(__name__)

PROFILE_TTL = 270  # seconds a profile stays in the shared cache (keys.profile_key)
LOCAL_PROFILE_TTL = 30  # ...and then in a process: a display name may lag a change by both, 5 minutes
LOCAL_PROFILES_MAX = 150_000  # profiles a process keeps (a few hundred bytes each: ~50 MB)
LOCAL_PLAYER_IDS_MAX = 100_000
PLAYER_ID_TTL = 24 * 3600
FRIENDS_TTL = 60

# Per-process caches in front of the shared one: a hot player's rank read then needs no cache
# round trip at all. Bounded; emptied whole when full (cheaper than LRU bookkeeping per read).
_local_player_ids: dict[tuple[int, str], int] = {}
_local_profiles: dict[str, tuple[float, Profile]] = {}


def local_caches_clear() -> None:
    """Forget what this process cached (tests that reuse primary keys call it)."""
    _local_player_ids.clear()
    _local_profiles.clear()


def player_pk(game_id: int, *, external_id: str) -> int | None:
    """A player's primary key (immutable once created, so cached long)."""
    pk = _local_player_ids.get((game_id, external_id))
    if pk is not None:
        return pk
    key = f"pid:{game_id}:{external_id}"
    pk = cache.get(key)
    if pk is None:
        pk = selectors.player_pk(game_id, external_id=external_id)
        if pk is not None:
            cache.set(key, pk, PLAYER_ID_TTL)
    if pk is not None:
        if len(_local_player_ids) >= LOCAL_PLAYER_IDS_MAX:
            _local_player_ids.clear()
        _local_player_ids[(game_id, external_id)] = pk
    return pk


def player_pk_cached(game_id: int, *, external_id: str) -> int | None:
    """player_pk if this process already knows it, else None (no cache or database read)."""
    return _local_player_ids.get((game_id, external_id))


def friend_pks(pk: int) -> list[int]:
    """A player's friends (keys.friend_list_key caches them; friends.lua reads the same key)."""
    k = keys.friend_list_key(pk)
    try:
        raw = get_redis().get(k)
    except REDIS_DOWN:
        return selectors.friend_pks(pk)
    if raw is not None:
        return friend_list_parse(raw)
    found = selectors.friend_pks(pk)
    with contextlib.suppress(*REDIS_DOWN):
        get_redis().set(k, ",".join(map(str, found)), ex=FRIENDS_TTL)
    return found


def friend_list_parse(raw: bytes | str) -> list[int]:
    text = raw.decode() if isinstance(raw, bytes) else raw
    return [int(x) for x in text.split(",")] if text else []


def friends_cache_forget(player_ids: list[int]) -> None:
    if player_ids:
        with contextlib.suppress(*REDIS_DOWN):
            get_redis().delete(*(keys.friend_list_key(pk) for pk in player_ids))


def profiles_of(
    board: BoardConfig, *, window: str, members: dict[int, int], fetched: dict[int, bytes | None] | None = None
) -> dict[int, Profile]:
    """Profiles for a page at once: this process's cache, then the shared one (one MGET), then
    one Postgres query for the rest. `fetched`: the shared cache's values for some members,
    already read (friends.lua reads them in the board read's round trip); the MGET asks only
    for the others.

    Keys include the encoded score, so a new value (with new metadata) is a new key."""
    prefix = keys.profile_key_prefix(board.id, window)  # keys.profile_key, spelled once per read
    cache_keys = {pk: f"{prefix}{pk}:{encoded}" for pk, encoded in members.items()}
    now = time.monotonic()
    found: dict[int, Profile] = {}
    remote: dict[int, str] = {}
    for pk, k in cache_keys.items():
        hit = _local_profiles.get(k)
        if hit is not None and now - hit[0] < LOCAL_PROFILE_TTL:
            found[pk] = hit[1]
        else:
            remote[pk] = k
    if not remote:
        return found
    if len(_local_profiles) + len(remote) > LOCAL_PROFILES_MAX:
        _local_profiles.clear()
    if fetched:
        for pk in [pk for pk in remote if pk in fetched]:
            raw = fetched[pk]
            k = remote.pop(pk)
            if raw is not None:
                found[pk] = profile = Profile(*json.loads(raw))
                _local_profiles[k] = (now, profile)
    if remote:
        for (pk, k), raw in zip(remote.items(), _shared_get(list(remote.values())), strict=True):
            if raw is not None:
                found[pk] = profile = Profile(*json.loads(raw))
                _local_profiles[k] = (now, profile)
    missing = [pk for pk in members if pk not in found]
    if missing:
        loaded = selectors.profiles(board.id, window=window, pks=missing)
        found.update(loaded)
        # a profile whose value Postgres has moved on from is not cached under the old score;
        # rolling windows have no value row (encoded None) and are cached as they are
        fresh = {cache_keys[pk]: p for pk, p in loaded.items() if p.encoded in (members[pk], None)}
        _shared_set(fresh)
        for k, p in fresh.items():
            _local_profiles[k] = (now, p)
    return found


# The shared profile cache is plain Redis strings of compact JSON, read with one MGET: through
# Django's cache each of a friends board's ~200 profiles cost a key prefix, an int() attempt
# and an unpickle, about a third of the read's CPU (`python -m bench --profile cpu`). Like the
# cache, it is an optimisation: Redis down reads as a miss, and Postgres answers.


def _shared_get(names: list[str]) -> list[bytes | None]:
    try:
        return get_redis().mget(names)
    except REDIS_DOWN:
        return [None] * len(names)


def _shared_set(values: dict[str, Profile]) -> None:
    if not values:
        return
    pipe = get_redis().pipeline(transaction=False)
    for k, p in values.items():
        pipe.set(
            k, json.dumps([p.external_id, p.display_name, p.metadata, p.encoded], separators=(",", ":")), ex=PROFILE_TTL
        )
    with contextlib.suppress(*REDIS_DOWN):
        pipe.execute()


def unknown_members_warn(
    board: BoardConfig, *, window: str, members: Iterable[int], profiles: dict[int, Profile]
) -> None:
    """Members of a sorted set with no player row are skipped by every read (they still hold
    their place, so the ranks around them stay Redis' ranks). The index lost sync with the
    durable store (a player deleted outside the service); a rebuild removes them."""
    missing = sorted(set(members) - profiles.keys())
    if missing:
        log.warning(
            "board %s %s: %d member(s) without a player row skipped (run rebuild_boards): %s",
            board.slug,
            window,
            len(missing),
            missing[:10],
        )


def id_bytes(profiles: dict[int, Profile], *, pk: int) -> bytes:
    """The last tie-break of docs/api.md §6: player id bytes (a member without a row sorts first of
    its group; it is never shown)."""
    profile = profiles.get(pk)
    return profile.external_id.encode() if profile else b""
