"""The live board websocket (docs/api.md §9; docs/live.md).

`/ws/games/{game}/boards/{board}/?window=all[&region=eu][&token=...]`

One consumer per socket, one hub (`LocalHub`) per process. The consumer resolves what the
socket asked for and sends the on-connect messages; the hub holds the process's one channel-layer
subscription per board window it has sockets on and, per update, sends the ready-made top text
to each socket and, after one shared standings read for all of them, each player's rank and
friends passing them. Per update and process that is one Redis message, one thread hop and a
plain loop of sends, however many sockets the process holds. All sync work (Postgres, the sync
Redis client) runs in worker threads, never on the event loop. What is sent is decided in
boards/live.py; this module only moves messages.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import weakref
from collections.abc import Coroutine
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone

from boards import live
from rediskit.client import REDIS_DOWN, log_unavailable
from scores.auth import player_token_generations

log = logging.getLogger(__name__)

SERVER_SEND = "live.server_send"  # the scope key of the server's own send (boards/routing.py)
FRIENDS_REFRESH_SECONDS = 60.0
ROLLOVER_JITTER_SECONDS = 30.0  # spread the reconnects of sockets whose daily window ended
OUTBOX_EVENTS = 50  # `passed` notices kept for a client that reads slower than they come (tell)


def _threaded(fn: Any) -> Any:
    # thread_sensitive=False: sockets' reads run in parallel worker threads instead of queueing
    # behind one another in a single thread; database_sync_to_async still returns connections
    return database_sync_to_async(fn, thread_sensitive=False)


def _start(coro: Coroutine[Any, Any, None]) -> asyncio.Task | None:
    """Runs `coro` up to its first wait, as Python 3.12's eager tasks do (this is 3.11): None
    when it finished without waiting, else a task that finishes it. Raises what `coro` raised
    before waiting.

    The hub sends one frame to thousands of sockets in a plain loop. uvicorn's websocket send
    (the websockets-sansio protocol its `--ws auto` picks when `websockets` is installed, as in
    scripts/web.py and bench/server.py) writes the frame to the transport synchronously; it waits
    only while that transport is paused, i.e. while the client reads slower than we write and
    64 kB are buffered for it. Awaiting that would hold up every other socket behind one slow
    client; a task per send would cost more than the send itself."""
    try:
        waiting_on = coro.send(None)
    except StopIteration:
        return None
    return asyncio.ensure_future(_finish(coro, waiting_on))


async def _finish(coro: Coroutine[Any, Any, None], waiting_on: Any) -> None:
    """Drives a coroutine `_start` left waiting on the future `waiting_on`, as a Task would."""
    try:
        while True:
            if waiting_on is None:  # a bare yield (asyncio.sleep(0))
                await asyncio.sleep(0)
            else:
                await asyncio.wait([waiting_on])
            try:
                waiting_on = coro.send(None)  # the awaited future is done: resume (raising its error if any)
            except StopIteration:
                return
    finally:
        coro.close()


def _succeeded(future: asyncio.Future) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


class _Group:
    """The sockets of one board window in this process, and the updates waiting for them."""

    def __init__(self, hub: LocalHub, name: str, board: Any, window: str) -> None:
        self.name = name
        self.board = board
        self.window = window
        self.sockets: dict[BoardConsumer, None] = {}  # an ordered set
        self.subscribed: asyncio.Future | None = None  # group_add and watch done (or failed)
        self.channel = ""  # the hub's layer channel this group was added to
        self.updates: asyncio.Queue[dict] = asyncio.Queue()
        # one update at a time per group, so each socket gets an update's messages before the next's
        self.worker = asyncio.ensure_future(hub._deliver_all(self))
        self.friends_refresh: asyncio.Future | None = None
        self.friends_checked = 0.0  # monotonic

    @property
    def pair(self) -> tuple[int, str]:
        return (self.board.id, self.window)


class LocalHub:
    """What one process (one event loop) knows about its own sockets: which board windows they
    watch (kept alive in Redis for the publishers; one channel-layer subscription each), and
    what each socket is sent when an update arrives.

    One layer channel per process receives every group's updates (each names its group); the
    layer itself is subscribed once per group, whatever the number of sockets in it."""

    def __init__(self) -> None:
        self.groups: dict[str, _Group] = {}
        self._channel: asyncio.Future | None = None  # the process's layer channel name
        self._receiver: asyncio.Task | None = None
        self._heartbeat: asyncio.Task | None = None
        self._idle = asyncio.Event()
        self._token_check: asyncio.Task | None = None

    async def join(self, sock: BoardConsumer) -> None:
        """Subscribes `sock` to its board window. From here on updates reach it: in its backlog
        until it goes live (`BoardConsumer._go_live`), then directly. Raises when the channel layer
        is unreachable (the socket is then closed)."""
        assert sock.group is not None and sock.sub is not None
        group = self.groups.get(sock.group)
        if group is None:
            group = self.groups[sock.group] = _Group(self, sock.group, sock.sub.board, sock.sub.window)
            group.subscribed = asyncio.ensure_future(self._subscribe(group))
        group.sockets[sock] = None
        if self._heartbeat is None or self._heartbeat.done():
            self._idle.clear()
            self._heartbeat = asyncio.ensure_future(self._refresh_watches())
        if sock.sub.token_generation is not None and (self._token_check is None or self._token_check.done()):
            self._token_check = asyncio.ensure_future(self._check_tokens())
        assert group.subscribed is not None
        # shielded: one socket giving up (disconnected meanwhile) does not cancel the others' subscription
        await asyncio.shield(group.subscribed)

    async def _subscribe(self, group: _Group) -> None:
        try:
            group.channel = await self._channel_name()
            await get_channel_layer().group_add(group.name, group.channel)
            # before the socket reads its first state: a change after that read is published to it
            await _threaded(live.windows_watch)([group.pair])
        except BaseException:
            if self.groups.get(group.name) is group:  # the next socket tries again
                self._drop(group)
            raise

    async def _channel_name(self) -> str:
        if self._channel is None or (self._channel.done() and not _succeeded(self._channel)):
            self._channel = asyncio.ensure_future(self._open_channel())
        return await asyncio.shield(self._channel)

    async def _open_channel(self) -> str:
        channel = await get_channel_layer().new_channel()
        self._receiver = asyncio.ensure_future(self._receive(channel))
        return channel

    async def _receive(self, channel: str) -> None:
        """Hands each update to its group's worker (this process's sockets on other board windows
        do not wait for it)."""
        layer = get_channel_layer()
        while True:
            try:
                event = await layer.receive(channel)
            except Exception:  # a message it could not decode: the next one is read all the same
                log.exception("live: could not receive an update")
                continue
            group = self.groups.get(event.get("group", ""))
            if group is not None and event.get("type") == "live.update":
                group.updates.put_nowait(event)

    def leave(self, sock: BoardConsumer) -> None:
        """`sock` gets nothing more (it closed, or is closing)."""
        group = self.groups.get(sock.group or "")
        if group is None or sock not in group.sockets:
            return
        del group.sockets[sock]
        if not group.sockets:
            self._drop(group)
            asyncio.ensure_future(self._unsubscribe(group))

    def _drop(self, group: _Group) -> None:
        del self.groups[group.name]
        group.worker.cancel()
        if not self.groups:
            self._idle.set()
            if self._receiver is not None:
                # layer.receive, cancelled, removes the channel; the next socket opens a new one
                self._receiver.cancel()
                self._receiver = self._channel = None

    async def _unsubscribe(self, group: _Group) -> None:
        assert group.subscribed is not None
        await asyncio.wait([group.subscribed])  # not before its group_add is done
        if not _succeeded(group.subscribed):
            return  # it failed: nothing to undo
        channel = self._channel.result() if self._channel is not None and _succeeded(self._channel) else None
        if group.name in self.groups and channel == group.channel:
            # a socket joined the window again meanwhile, on the same channel: keep it (this check
            # and group_discard's removal from the layer's group run with no await in between)
            return
        try:
            await get_channel_layer().group_discard(group.name, group.channel)
        except Exception as exc:  # Redis down: the subscriber's reconnect drops what it no longer knows
            log.debug("live: could not leave %s: %s", group.name, exc)

    async def _deliver_all(self, group: _Group) -> None:
        while True:
            events = [await group.updates.get()]
            while not group.updates.empty():  # the process fell behind: only the latest state matters
                events.append(group.updates.get_nowait())
            try:
                await self._deliver(group, events)
            except Exception:
                log.exception("live: delivering an update to %s failed", group.name)

    async def _deliver(self, group: _Group, events: list[dict]) -> None:
        """One update (or several the process fell behind on) to every socket of the group: the
        top text as published, then, after one standings read for all of the group's players
        and their friends, each player's own rank and passed messages."""
        top = next((e["top"] for e in reversed(events) if e.get("top")), None)
        ready: list[BoardConsumer] = []
        for sock in list(group.sockets):
            if sock.backlog is not None:  # still sending its on-connect messages: it sends this after them
                sock.backlog.append(top)
            else:
                ready.append(sock)
        players = [sock for sock in ready if sock.pk is not None]
        read = None
        if players:
            self._friends_refresh(group, players)
            wanted: set[int] = set()
            for sock in players:
                wanted |= sock.follows
            # in a worker thread, mostly waiting for Redis, while the loop below sends the tops
            read = asyncio.ensure_future(_threaded(live.standings_read)(group.board, group.window, sorted(wanted)))
        if top is not None:
            for sock in ready:
                sock.tell(top)
        if read is None:
            return
        try:
            after = await read
        except REDIS_DOWN as exc:
            log.debug("live: standings unavailable: %s", exc)
            return
        for sock in players:
            if sock in group.sockets:  # not closed during the read
                sock.standings_changed(after)

    def _friends_refresh(self, group: _Group, players: list[BoardConsumer]) -> None:
        """Friend lists older than FRIENDS_REFRESH_SECONDS are re-read in the background, all in
        one thread hop: an update does not wait for them, the next one uses them. Looked for at
        most once a second per group (not on every update, through every socket)."""
        now = time.monotonic()
        if now - group.friends_checked < 1.0 or (group.friends_refresh and not group.friends_refresh.done()):
            return
        group.friends_checked = now
        stale = [s for s in players if now - s.friends_at > FRIENDS_REFRESH_SECONDS]
        if stale:
            for sock in stale:
                sock.friends_at = now
            group.friends_refresh = asyncio.ensure_future(self._friends_read(stale))

    async def _friends_read(self, stale: list[BoardConsumer]) -> None:
        try:
            found = await _threaded(live.friends_of_players)(sorted({s.pk for s in stale if s.pk is not None}))
        except REDIS_DOWN as exc:
            log.debug("live: friends unavailable: %s", exc)
            return
        for sock in stale:
            if sock.pk in found:
                sock.friends_set(found[sock.pk])

    async def _refresh_watches(self) -> None:
        while self.groups:
            try:
                await asyncio.wait_for(self._idle.wait(), timeout=live.WATCH_REFRESH_SECONDS)
                return
            except TimeoutError:
                pass
            try:
                await _threaded(live.windows_watch)([g.pair for g in self.groups.values()])
            except REDIS_DOWN as exc:
                log_unavailable(log, "live: could not refresh watches: %s", exc=exc)

    def _token_sockets(self) -> list[BoardConsumer]:
        return [
            sock
            for group in self.groups.values()
            for sock in group.sockets
            if sock.sub is not None and sock.sub.token_generation is not None
        ]

    async def _check_tokens(self) -> None:
        """Closes (4401) the sockets whose token was revoked (docs/api.md §3.2): every
        PLAYER_TOKEN_RECHECK_SECONDS, one read of the generations of all the process's token
        sockets' players. Stops when the process has no token socket left (join starts it again)."""
        while True:
            await asyncio.sleep(settings.PLAYER_TOKEN_RECHECK_SECONDS)
            sockets = self._token_sockets()
            if not sockets:
                return
            try:
                current = await _threaded(player_token_generations)(sorted({s.pk for s in sockets if s.pk}))
            except Exception:  # Redis and Postgres both unreachable: the next round tries again
                log.exception("live: could not check the sockets' tokens")
                continue
            for sock in sockets:
                assert sock.sub is not None
                if live.token_is_revoked(sock.sub, current):
                    sock.token_revoked()


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LocalHub] = weakref.WeakKeyDictionary()


def hub() -> LocalHub:
    loop = asyncio.get_running_loop()
    found = _hubs.get(loop)
    if found is None:
        found = _hubs[loop] = LocalHub()
    return found


class BoardConsumer(AsyncWebsocketConsumer):
    # No channel-layer channel per socket (get_channel_layer answers None for an alias with no
    # layer configured): the process's hub subscribes once per board window and sends to the
    # sockets itself, instead of the layer queueing every update once per socket.
    channel_layer_alias = None

    group: str | None = None
    sub: live.Subscription | None = None
    pk: int | None = None
    # Updates that arrived while the socket was still sending its on-connect messages (their
    # tops, None for an update without one); None once it is live. Keeps a socket's order: its
    # on-connect top never follows a newer update's top.
    backlog: list[str | None] | None = None

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        query = {k: v[-1] for k, v in parse_qs(self.scope.get("query_string", b"").decode("latin-1")).items()}
        user = self.scope.get("user")
        user_id = user.id if user is not None and user.is_authenticated else None
        self.outbox: list[str] = []  # frames waiting behind a send to a slow client
        # text frames skip the middlewares' wrapped sends (boards/routing.py, ServerSend)
        self.server_send = self.scope.get(SERVER_SEND, self.base_send)
        self.writing: asyncio.Task | None = None
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
        self.friends_at = 0.0  # monotonic
        self.follows: set[int] = set()
        self.snapshot: dict[int, live.LiveStanding] | None = None
        self.snapshot_friends: set[int] = set()  # the friends the snapshot was taken for
        self.group = live.group_name(sub.board.id, sub.window)
        self.hub = hub()
        self.backlog = []
        await self.hub.join(self)
        if self.pk is not None:
            self.friends_set(await _threaded(live.friends_of)(self.pk))
        text, _ = await _threaded(live.top_text)(sub.board, sub.window)
        self.tell(text)
        if self.pk is not None:
            await self._standings_read_send()
        await self._go_live()
        if sub.ends_at is not None:
            delay = (sub.ends_at - timezone.now()).total_seconds() + random.uniform(0, ROLLOVER_JITTER_SECONDS)
            self.rollover = asyncio.get_running_loop().call_later(max(delay, 0), self._rolled_over)

    async def _go_live(self) -> None:
        """Sends what the hub kept back during the on-connect messages, then lets it send directly."""
        while self.backlog:
            tops, self.backlog = [t for t in self.backlog if t is not None], []
            if tops:
                self.tell(tops[-1])
            if self.pk is not None:
                await self._standings_read_send()
        self.backlog = None  # no await since the loop found it empty: nothing can slip in between

    def _rolled_over(self) -> None:
        # a socket on ?window=daily follows today's window: tell the client to reconnect for the new one
        self.hub.leave(self)
        asyncio.ensure_future(self.close(code=live.WINDOW_ENDED, reason="window ended; reconnect"))

    def token_revoked(self) -> None:
        self.hub.leave(self)
        asyncio.ensure_future(self.close(code=live.BAD_TOKEN, reason="token revoked"))

    def friends_set(self, friends: list[int]) -> None:
        assert self.pk is not None
        self.friends = set(friends)
        self.friends_at = time.monotonic()
        self.follows = {self.pk, *self.friends}  # whose standings this socket needs

    async def _standings_read_send(self) -> None:
        """The player's own read (on connect, and for updates that came during it)."""
        assert self.sub is not None
        try:
            after = await _threaded(live.standings_read)(self.sub.board, self.sub.window, sorted(self.follows))
        except REDIS_DOWN as exc:
            log.debug("live: standings unavailable: %s", exc)
            return
        self.standings_changed(after)

    def standings_changed(self, after: dict[int, live.LiveStanding]) -> None:
        """Sends what changed for this player from the previous snapshot to `after` (which may
        hold other sockets' players too)."""
        assert self.pk is not None
        for text in live.player_messages(self.pk, self.snapshot_friends & self.friends, self.snapshot, after):
            self.tell(text)
        self.snapshot = {pk: after[pk] for pk in self.follows if pk in after}  # O(friends), not O(after)
        self.snapshot_friends = self.friends

    def tell(self, text: str) -> None:
        """Sends a text frame now, or after the frames still waiting for a slow client; never
        waits. A socket whose send fails (closed meanwhile) leaves the hub.

        A client that reads slower than updates come is owed the latest state, not each one in
        between: a waiting `top` or `rank` gives way to a newer one of its kind, and at most
        OUTBOX_EVENTS `passed` wait (the oldest go). What waits for one client stays bounded
        however long it does not read (docs/live.md, "Protocol")."""
        if self.writing is None:
            self._send(text)
            return
        kind = live.state_kind(text)
        if kind is not None:
            self.outbox = [waiting for waiting in self.outbox if live.state_kind(waiting) != kind]
        self.outbox.append(text)
        if len(self.outbox) > OUTBOX_EVENTS:
            # events counted apart from the top and rank that may wait with them: a bound on the
            # whole outbox would keep OUTBOX_EVENTS + 1 of them whenever no top waits
            events = [i for i, waiting in enumerate(self.outbox) if live.state_kind(waiting) is None]
            if len(events) > OUTBOX_EVENTS:
                del self.outbox[events[0]]

    def _send(self, text: str) -> None:
        try:
            self.writing = _start(self.server_send({"type": "websocket.send", "text": text}))
        except Exception as exc:
            self._broken(exc)
            return
        if self.writing is not None:
            self.writing.add_done_callback(self._written)

    def _written(self, task: asyncio.Task) -> None:
        self.writing = None
        if task.cancelled():
            self._broken(None)
        elif (exc := task.exception()) is not None:
            self._broken(exc)
        while self.outbox and self.writing is None:
            self._send(self.outbox.pop(0))

    def _broken(self, exc: BaseException | None) -> None:
        log.debug("live: a send failed, the socket leaves the hub: %r", exc)
        self.outbox.clear()
        if self.group is not None:
            self.hub.leave(self)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels' own dispatch first closes stale database connections, for every message of
        # every socket, through the one thread all thread-sensitive calls share: with a thousand
        # sockets that queue became the bottleneck of the whole process (bench/websockets.py).
        # This consumer touches the database only in database_sync_to_async, which closes its own.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Clients have nothing to say; anything they send is ignored."""

    async def disconnect(self, code: int) -> None:
        rollover = getattr(self, "rollover", None)
        if rollover is not None:
            rollover.cancel()
        if self.group is not None:
            self.hub.leave(self)


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Any other websocket path: accepted only to say 4404, so clients see a documented code."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=live.NOT_FOUND, reason="no such websocket")
