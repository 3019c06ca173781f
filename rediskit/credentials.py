"""Redis' part in the players' credentials (docs/api.md §3.1 and §3.2): the signatures of
minting requests already served, and the mirror of each player's token generation. The durable
core (scores/auth.py) never touches Redis itself: boards/apps.py registers this module as its
credential store. Every function answers None (or False) when Redis is unreachable, never
raises for it: the caller decides what that means (minting refused, Postgres asked)."""

from __future__ import annotations

from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis


def signature_claim(key_id: str, v1: str, ttl: int) -> bool | None:
    """Mark a signature served (SET NX for `ttl` seconds): True the first time, False if it
    was served before, None when Redis is unreachable."""
    try:
        return bool(get_redis().set(keys.signature_once_key(key_id, v1), b"1", nx=True, ex=ttl))
    except REDIS_DOWN:
        return None


def generations(pks: list[int]) -> dict[int, int] | None:
    """The mirrored token generation of each of these players that Redis holds (one MGET);
    None when Redis is unreachable."""
    try:
        raw = get_redis().mget([keys.player_tokens_key(pk) for pk in pks])
    except REDIS_DOWN:
        return None
    return {pk: int(v) for pk, v in zip(pks, raw, strict=True) if v is not None}


def generations_fill(found: dict[int, int], ttl: int) -> None:
    """Mirror these generations (read from Postgres) where Redis holds none: SET NX, so a
    revocation's newer number written meanwhile stays. Redis unreachable: nothing."""
    try:
        with get_redis().pipeline(transaction=False) as pipe:
            for pk, generation in found.items():
                pipe.set(keys.player_tokens_key(pk), generation, nx=True, ex=ttl)
            pipe.execute()
    except REDIS_DOWN:
        pass


def generation_set(pk: int, generation: int, ttl: int) -> bool:
    """Mirror a revocation's new generation (overwriting); False when Redis is unreachable."""
    try:
        get_redis().set(keys.player_tokens_key(pk), generation, ex=ttl)
    except REDIS_DOWN:
        return False
    return True
