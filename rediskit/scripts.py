"""Lua scripts, loaded once per process from rediskit/lua/*.lua and run by SHA (EVALSHA,
falling back to loading the script after a Redis restart, as redis-py's Script does)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from redis import Redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from rediskit.client import get_redis, own_connection_command

LUA_DIR = Path(__file__).resolve().parent / "lua"


class LuaScript(Script):
    """redis-py's Script; called with a plain client (one Redis, no pipeline), it runs on the
    calling thread's own connection (rediskit/client.py, "the hot reads' round trip"). Pipelines
    and cluster clients take redis-py's path, which knows how to load scripts on them."""

    def __call__(self, keys: Sequence[Any] | None = None, args: Iterable[Any] | None = None, client: Any = None) -> Any:
        if client is None:
            client = self.registered_client
        if type(client) is not Redis:
            return super().__call__(keys=keys, args=args, client=client)
        keys = keys or ()
        args = args or ()
        try:
            return own_connection_command(client, "EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            # Redis restarted (or was flushed of scripts) since this process loaded it
            self.sha = client.script_load(self.script)
            return own_connection_command(client, "EVALSHA", self.sha, len(keys), *keys, *args)


@cache
def script(name: str) -> LuaScript:
    return LuaScript(get_redis(), (LUA_DIR / f"{name}.lua").read_text())
