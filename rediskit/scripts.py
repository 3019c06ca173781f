"""Lua scripts, loaded once per process from rediskit/lua/*.lua and run by SHA (EVALSHA,
falling back to EVAL after a Redis restart, as redis-py's Script does)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from redis.commands.core import Script

from rediskit.client import get_redis

LUA_DIR = Path(__file__).resolve().parent / "lua"


@cache
def script(name: str) -> Script:
    return get_redis().register_script((LUA_DIR / f"{name}.lua").read_text())
