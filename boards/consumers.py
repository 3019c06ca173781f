"""The live board websocket (docs/api.md §9; docs/live.md).

`/ws/games/{game}/boards/{board}/?window=all[&region=eu][&token=...]`

One consumer per socket. It joins its board window's group and forwards what boards/live.py
publishes there: the top message as ready-made text (no per-socket work but the send), and, for
a socket with a player, the player's rank and friends passing them. Those come from one shared
read per process, group and update (`LocalHub.standings`), however many sockets the process holds.
All sync work (Postgres, the sync Redis client) runs in worker threads, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import weakref
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import timezone

from boards import live
from rediskit.client import REDIS_DOWN, log_unavailable

log = logging.getLogger(__name__)

FRIENDS_REFRESH_SECONDS = 60.0
ROLLOVER_JITTER_SECONDS = 30.0  # spread the reconnects of sockets whose daily window ended


def _threaded(fn: Any) -> Any:
    # thread_sensitive=False: sockets' reads run in parallel worker threads instead of queueing
    # behind one another in a single thread; database_sync_to_async still returns connections
    return database_sync_to_async(fn, thread_sensitive=False)


class LocalHub:
    """What one process (one event loop) knows about its own sockets: which board windows they
    watch (kept alive in Redis for the publishers), and which players they follow per group,
    so one standings read per group and update serves them all."""

    def __init__(self) -> None:
        self.members: dict[str, dict[str, set[int]]] = {}  # group -> channel -> player pks wanted
        self.pairs: dict[str, tuple[int, str]] = {}  # group -> (board_id, window)
        self._reads: dict[str, tuple[str, frozenset[int], asyncio.Future]] = {}
        self._heartbeat: asyncio.Task | None = None
        self._idle = asyncio.Event()

    async def join(self, group: str, pair: tuple[int, str], channel: str, wanted: set[int]) -> None:
        first = group not in self.members
        self.members.setdefault(group, {})[channel] = wanted
        self.pairs[group] = pair
        if first:
            # before the socket reads its first state: a change after that read is published to it
            await _threaded(live.windows_watch)([pair])
        if self._heartbeat is None or self._heartbeat.done():
            self._idle.clear()
            self._heartbeat = asyncio.ensure_future(self._refresh_watches())

    def want(self, group: str, channel: str, wanted: set[int]) -> None:
        if channel in self.members.get(group, {}):
            self.members[group][channel] = wanted

    def leave(self, group: str, channel: str) -> None:
        channels = self.members.get(group)
        if channels is None:
            return
        channels.pop(channel, None)
        if not channels:
            del self.members[group]
            self.pairs.pop(group, None)
            self._reads.pop(group, None)
        if not self.members:
            self._idle.set()

    async def standings(self, group: str, update_id: str, board: Any, window: str, needed: set[int]) -> dict:
        """The standings of every player this process's sockets in `group` follow, read once per
        update. Raises REDIS_DOWN when Redis is unreachable."""
        entry = self._reads.get(group)
        if entry is None or entry[0] != update_id or not needed <= entry[1]:
            wanted = frozenset(needed.union(*self.members.get(group, {}).values()))
            future = asyncio.ensure_future(_threaded(live.standings_read)(board, window, sorted(wanted)))
            entry = (update_id, wanted, future)
            self._reads[group] = entry
        return await asyncio.shield(entry[2])

    async def _refresh_watches(self) -> None:
        while self.members:
            try:
                await asyncio.wait_for(self._idle.wait(), timeout=live.WATCH_REFRESH_SECONDS)
                return
            except TimeoutError:
                pass
            try:
                await _threaded(live.windows_watch)(list(self.pairs.values()))
            except REDIS_DOWN as exc:
                log_unavailable(log, "live: could not refresh watches: %s", exc=exc)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LocalHub] = weakref.WeakKeyDictionary()


def hub() -> LocalHub:
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = LocalHub()
    return found


class BoardConsumer(AsyncWebsocketConsumer):
    group: str | None = None
    sub: live.Subscription | None = None

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        query = {k: v[-1] for k, v in parse_qs(self.scope.get("query_string", b"").decode("latin-1")).items()}
        user = self.scope.get("user")
        user_id = user.id if user is not None and user.is_authenticated else None
        await self.accept()
        try:
            self.sub = await _threaded(live.subscription_open)(
                kwargs["game"],
                kwargs["board"],
                query.get("window", "all"),
                query.get("region"),
                query.get("token"),
                user_id,
            )
        except live.Refused as refused:
            await self.close(code=refused.code, reason=refused.reason)
            return
        sub = self.sub
        self.pk = sub.player_pk
        self.friends: set[int] = set()
        self.friends_at = 0.0
        self.snapshot: dict[int, live.LiveStanding] | None = None
        self.group = live.group_name(sub.board.id, sub.window)
        self.hub = hub()
        await self.channel_layer.group_add(self.group, self.channel_name)
        if self.pk is not None:
            await self._friends_refresh()
        await self.hub.join(self.group, (sub.board.id, sub.window), self.channel_name, self._wanted())
        text, _ = await _threaded(live.top_text)(sub.board, sub.window)
        await self.send(text_data=text)
        if self.pk is not None:
            await self._standings_send(None)
        if sub.ends_at is not None:
            delay = (sub.ends_at - timezone.now()).total_seconds() + random.uniform(0, ROLLOVER_JITTER_SECONDS)
            self.rollover = asyncio.get_running_loop().call_later(max(delay, 0), self._rolled_over)

    def _rolled_over(self) -> None:
        # a socket on ?window=daily follows today's window: tell the client to reconnect for the new one
        asyncio.ensure_future(self.close(code=live.WINDOW_ENDED, reason="window ended; reconnect"))

    def _wanted(self) -> set[int]:
        return {self.pk, *self.friends} if self.pk is not None else set()

    async def _friends_refresh(self) -> None:
        self.friends = set(await _threaded(live.friends_of)(self.pk))
        self.friends_at = time.monotonic()

    async def _standings_send(self, update_id: str | None) -> None:
        """Read the player's and friends' standings (shared with the process's other sockets on
        this group) and send what changed for this player."""
        judged = self.friends  # friends known when the previous snapshot was taken
        if time.monotonic() - self.friends_at > FRIENDS_REFRESH_SECONDS:
            await self._friends_refresh()
            self.hub.want(self.group, self.channel_name, self._wanted())
        try:
            if update_id is None:
                after = await _threaded(live.standings_read)(self.sub.board, self.sub.window, sorted(self._wanted()))
            else:
                after = await self.hub.standings(self.group, update_id, self.sub.board, self.sub.window, self._wanted())
        except REDIS_DOWN as exc:
            log.debug("live: standings unavailable: %s", exc)
            return
        for text in live.player_messages(self.pk, judged & self.friends, self.snapshot, after):
            await self.send(text_data=text)
        # `after` holds every player this process follows in the group: pick only ours (O(friends))
        self.snapshot = {pk: after[pk] for pk in self._wanted() if pk in after}

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels' own dispatch first closes stale database connections, for every message of
        # every socket, through the one thread all thread-sensitive calls share: with a thousand
        # sockets that queue became the bottleneck of the whole process (bench/websockets.py).
        # This consumer touches the database only in database_sync_to_async, which closes its own.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def live_update(self, event: dict[str, Any]) -> None:
        if event.get("top"):
            await self.send(text_data=event["top"])
        if self.pk is not None:
            await self._standings_send(event["id"])

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients have nothing to say; anything they send is ignored."""

    async def disconnect(self, code: int) -> None:
        rollover = getattr(self, "rollover", None)
        if rollover is not None:
            rollover.cancel()
        if self.group is not None:
            self.hub.leave(self.group, self.channel_name)
            await self.channel_layer.group_discard(self.group, self.channel_name)


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Any other websocket path: accepted only to say 4404, so clients see a documented code."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=live.NOT_FOUND, reason="no such websocket")
