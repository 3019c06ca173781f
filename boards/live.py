"""Live updates over websockets (docs/api.md §9; docs/live.md).

Two halves, joined by the channel layer:

- Publishing (sync; the ingest post-commit path, moderation, Celery). After values reach the
  sorted sets, `windows_changed()` runs live_mark.lua: a board window somebody watches and that
  was not published within the last interval is published *now* (leading edge); otherwise it
  is marked dirty, and `flush_due()` publishes it once the interval has passed (trailing edge):
  a Celery task scheduled for that moment by the first change held back, with beat's flush every
  second as the safety net. So a burst of any size yields at most one update per interval per
  board window, and a quiet board updates at once. Publishing an update computes the top 10
  once, for everybody: `{"type": "live.update", "group", "top"}` goes to the window's group, with
  `top` the ready-made JSON text of docs/api.md §9's top message, or None when the top 10 is the
  same as the last one published.
- Reading (for boards/consumers.py): resolving what a socket subscribes to, the first top
  message, and the standings of the players a process's sockets care about, in one Lua round
  trip per group and update (`standings_read`).

Nothing here runs inside a transaction, and nothing here may fail a submission: publishing
logs and gives up when Redis or the layer is unreachable (the next change publishes again).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone
from redis.exceptions import RedisError

from boards import selectors
from boards.profiles import friend_pks
from rediskit import keys
from rediskit.client import REDIS_DOWN, get_redis, log_unavailable
from rediskit.scripts import script
from scores import encoding, windows
from scores.auth import player_from_token
from scores.selectors import BoardConfig, cached_board, cached_game, cached_game_config_of_board, player_of_user

log = logging.getLogger(__name__)

TOP_SIZE = 10
WATCH_TTL_MS = 60_000  # a watch lapses this long after its process stopped refreshing it
WATCH_REFRESH_SECONDS = 20.0  # how often a process with sockets refreshes its watches
STANDINGS_CHUNK = 500  # members per Lua call: keeps each call's time inside Redis short
LAST_TOP_TTL = 24 * 3600

PUBLISH_FAILED = (*REDIS_DOWN, RedisError)


def interval_ms() -> int:
    """At most one top message per board window per this long (docs/api.md §9)."""
    return int(settings.LIVE_INTERVAL_SECONDS * 1000)


def tick_ms() -> int:
    """At most one update per board window per this long: each tells the sockets to re-read
    their players' standings, and carries the top 10 only when interval_ms() allows one.
    Shorter than the top's interval so a player's own rank follows within a second even
    under a steady stream of results."""
    return min(int(settings.LIVE_TICK_SECONDS * 1000), interval_ms())


# --- names ----------------------------------------------------------------------------------


def member(board_id: int, window: str) -> str:
    return f"{board_id}|{window}"


def parse_member(raw: str | bytes) -> tuple[int, str]:
    text = raw.decode() if isinstance(raw, bytes) else raw
    board_id, window = text.split("|", 1)
    return int(board_id), window


_GROUP_UNSAFE = re.compile(r"[^a-zA-Z0-9.-]")


def group_name(board_id: int, window: str) -> str:
    """The channel-layer group of a board window. Group names allow only [a-zA-Z0-9_.-] and
    under 100 characters: the window is made readable and a digest keeps names unique."""
    readable = _GROUP_UNSAFE.sub("_", window)[:48]
    digest = hashlib.blake2s(window.encode(), digest_size=6).hexdigest()
    return f"live.{board_id}.{readable}.{digest}"


# --- publishing -----------------------------------------------------------------------------


def windows_changed(pairs: Iterable[tuple[int, str]]) -> int:
    """The values of these (board_id, window)s changed in Redis: publish the ones due now.
    Called after the write, outside any transaction. Returns how many were published."""
    members = sorted({member(b, w) for b, w in pairs})
    if not members:
        return 0
    try:
        now, due, held = script("live_mark")(
            keys=[keys.LIVE_WATCHED, keys.LIVE_DUE, keys.LIVE_DIRTY],
            args=[tick_ms(), *members],
            client=get_redis(),
        )
    except REDIS_DOWN as exc:
        log_unavailable(log, "live: Redis unavailable, %d board windows not marked: %s", len(members), exc=exc)
        return 0
    _trailing_schedule(int(now), {int(float(d)) for d in held})
    return _publish([parse_member(m) for m in due])


TRAILING_MARGIN_MS = 10  # a timer that fires a hair early would find nothing due yet


def _trailing_schedule(now_ms: int, due_ms: set[int]) -> None:
    """One delayed flush per moment held changes fall due (usually one: a submission's windows
    were published together). Beat's periodic flush remains the safety net."""
    from boards.tasks import live_flush

    for due in sorted(due_ms):
        countdown = max(0, due - now_ms + TRAILING_MARGIN_MS) / 1000
        try:
            live_flush.apply_async(countdown=countdown, expires=countdown + 5, retry=False)
        except Exception as exc:  # the broker is down: beat's flush publishes them a little later
            log.warning("live: could not schedule a trailing flush: %s", exc)


def flush_due() -> int:
    """The trailing edge (a scheduled Celery task, and beat): publish held-back changes due now."""
    r = get_redis()
    due = script("live_flush")(keys=[keys.LIVE_WATCHED, keys.LIVE_DUE, keys.LIVE_DIRTY], args=[tick_ms()], client=r)
    pairs = {parse_member(m) for m in due}
    # tops held back by their own interval: whoever removes the entry publishes it
    now_ms = _ms(r.time())
    for m in r.zrangebyscore(keys.LIVE_TOP_PENDING, "-inf", now_ms):
        if r.zrem(keys.LIVE_TOP_PENDING, m):
            pairs.add(parse_member(m))
    return _publish(sorted(pairs))


def _ms(time_reply: tuple[int, int]) -> int:
    """Redis' TIME reply (seconds, microseconds) in milliseconds, the clock the Lua scripts use."""
    seconds, micros = time_reply
    return int(seconds) * 1000 + int(micros) // 1000


def watched_changed(*, rolling_only: bool = False) -> int:
    """Mark every watched board window changed: after paths that rewrote boards without saying
    which windows (the outbox drain after an outage, a rebuild, the rolling refresh)."""
    now_ms = int(time.time() * 1000)
    pairs = [parse_member(m) for m in get_redis().zrangebyscore(keys.LIVE_WATCHED, now_ms, "+inf")]
    if rolling_only:
        pairs = [(b, w) for b, w in pairs if windows.kind_of(w) in windows.ROLLING_WINDOWS]
    return windows_changed(pairs)


def windows_watch(pairs: Iterable[tuple[int, str]]) -> None:
    """A websocket process says it has sockets on these board windows (refreshed periodically)."""
    until = int(time.time() * 1000) + WATCH_TTL_MS
    mapping = {member(b, w): until for b, w in pairs}
    if mapping:
        get_redis().zadd(keys.LIVE_WATCHED, mapping, gt=True)


def board_config(board_id: int) -> BoardConfig | None:
    config = cached_game_config_of_board(board_id)
    if config is None:
        return None
    return next((b for b in config.boards.values() if b.id == board_id), None)


def top_text(board: BoardConfig, window: str) -> tuple[str, bool]:
    """docs/api.md §9's top message for a board window, as JSON text, and whether it came from
    Postgres because Redis is unreachable."""
    # the entry shape is the /top API's own body: one definition of an entry (sub-scores included)
    from boards.api import entry_body

    page = selectors.board_top(board, window=window, offset=0, limit=TOP_SIZE)
    body = {"type": "top", "window": window, "entries": [entry_body(e) for e in page.entries]}
    return json.dumps(body, separators=(",", ":")), page.degraded


def _top_if_changed(board: BoardConfig, window: str) -> str | None:
    text, degraded = top_text(board, window)
    if degraded:
        return None
    digest = hashlib.blake2s(text.encode(), digest_size=16).hexdigest()
    previous = get_redis().set(keys.live_last_top(board.id, window), digest, ex=LAST_TOP_TTL, get=True)
    if isinstance(previous, bytes):
        previous = previous.decode()
    return None if previous == digest else text


def _top_due(board_id: int, window: str) -> bool:
    """Whether this update may carry a top message (one per interval_ms() per board window).
    When it may not, the window is queued for a publish the moment it may, so the last change
    of a burst still reaches the top 10."""
    r = get_redis()
    if r.set(keys.live_top_gate(board_id, window), 1, nx=True, px=interval_ms()):
        return True
    pipe = r.pipeline(transaction=False)
    pipe.pttl(keys.live_top_gate(board_id, window))
    pipe.time()
    left_ms, now = pipe.execute()
    now_ms = _ms(now)
    due_ms = now_ms + max(int(left_ms), 0)
    if r.zadd(keys.LIVE_TOP_PENDING, {member(board_id, window): due_ms}, nx=True):
        _trailing_schedule(now_ms, {due_ms})
    return False


def _publish(pairs: list[tuple[int, str]]) -> int:
    messages = []
    for board_id, window in pairs:
        board = board_config(board_id)
        if board is None:
            continue
        try:
            top = _top_if_changed(board, window) if _top_due(board_id, window) else None
        except REDIS_DOWN as exc:
            log_unavailable(
                log, "live: Redis unavailable, board %d window %s not published: %s", board_id, window, exc=exc
            )
            continue
        group = group_name(board_id, window)
        # `group`: a web process receives every group's updates on one channel (boards/consumers.py)
        update = {"type": "live.update", "group": group, "top": top}
        messages.append((group, update))
    if not messages:
        return 0
    try:
        async_to_sync(_send_all)(messages)
    except PUBLISH_FAILED as exc:
        log.warning("live: channel layer unavailable, %d updates dropped: %s", len(messages), exc)
        return 0
    return len(messages)


async def _send_all(messages: list[tuple[str, dict]]) -> None:
    layer = get_channel_layer()
    for group, message in messages:
        await layer.group_send(group, message)


# --- subscribing ----------------------------------------------------------------------------


class Refused(Exception):
    """A websocket the server will not serve: closed with `code` (docs/live.md lists them)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


BAD_REQUEST = 4400
BAD_TOKEN = 4401  # also an open socket whose token was revoked (docs/api.md §3.2)
FORBIDDEN = 4403
NOT_FOUND = 4404
WINDOW_ENDED = 4000


@dataclass(frozen=True)
class Subscription:
    board: BoardConfig
    window: str  # explicit
    player_pk: int | None
    ends_at: datetime | None  # when a relative window (daily, ...) rolls over; None if explicit
    # the token's generation when the socket authenticated with a token (None: session or
    # anonymous); the hub closes the socket once the player's generation passes it
    token_generation: int | None = None


def subscription_open(
    game: str, board: str, spec: str, region: str | None, token: str | None, user_id: int | None
) -> Subscription:
    """What a websocket asks for, resolved as the HTTP reads resolve it; raises Refused."""
    cfg = cached_board(game, board_slug=board)
    if cfg is None:
        what = "board" if cached_game(game)[0] is not None else "game"
        raise Refused(NOT_FOUND, f"unknown {what}")
    if len(spec) > 80 or (region is not None and len(region) > 64):
        raise Refused(BAD_REQUEST, "window or region too long")
    tz = cfg.reset_timezone
    if region:
        found = cfg.region(region)
        if found is None:
            raise Refused(NOT_FOUND, "unknown region")
        tz = found.timezone
    now = timezone.now()
    try:
        window = windows.resolve(spec, now, tz, cfg.windows, cfg.seasons)
    except windows.UnknownWindow:
        raise Refused(NOT_FOUND, "unknown window") from None
    ends_at = None
    if window != spec and spec not in windows.ROLLING_WINDOWS:
        span = windows.bounds(window, tz, cfg.seasons)
        ends_at = span[1] if span else None
    if region:
        window = windows.in_region(region, window)
    pk = generation = None
    if token:
        principal = player_from_token(token)
        if principal is None:
            raise Refused(BAD_TOKEN, "invalid, expired or revoked token")
        if principal.game_id != cfg.game_id:
            raise Refused(FORBIDDEN, "token of another game")
        pk, generation = principal.player_pk, principal.generation
    elif user_id:
        pk = player_of_user(user_id, game_id=cfg.game_id)
    return Subscription(cfg, window, pk, ends_at, generation)


def token_is_revoked(sub: Subscription, current: dict[int, int]) -> bool:
    """Whether a socket's token is revoked, given its players' current token generations
    (player_token_generations: one MGET for all of a process's token sockets; a player who no
    longer exists is missing, and revoked)."""
    if sub.token_generation is None or sub.player_pk is None:
        return False
    now = current.get(sub.player_pk)
    return now is None or now > sub.token_generation


@dataclass(frozen=True)
class LiveStanding:
    """One player's place on a board window (the board order, docs/api.md §6)."""

    position: int  # 0-based
    rank: int  # as displayed (shared boards: competition rank)
    score: int
    player: str
    display_name: str
    # the value's sub-scores by name (docs/api.md §2.3); None on a board that declares none
    subscores: dict[str, int] | None = None


def standings_read(board: BoardConfig, window: str, pks: list[int]) -> dict[int, LiveStanding]:
    """Where each of these players stands (those with a score): one friends.lua round trip (on a
    sharded board or a cluster, one per shard: boards/sharded.py) per
    STANDINGS_CHUNK players, with the reads' exact tie-break. Raises if Redis is down."""
    out: dict[int, LiveStanding] = {}
    shared = board.rank_display == "shared"
    subs = bool(board.subscores)
    for i in range(0, len(pks), STANDINGS_CHUNK):
        # the friends board's reader: the same positions the HTTP reads give
        found, profiles = selectors.member_standings(board, window=window, members=pks[i : i + STANDINGS_CHUNK])
        for pk, (encoded, position, better) in found.items():
            p = profiles[pk]
            rank = better + 1 if shared else position + 1
            out[pk] = LiveStanding(
                position,
                rank,
                encoding.decode_value(board, encoded),
                p.external_id,
                p.display_name,
                encoding.decode_subscores(board, encoded) if subs else None,
            )
    return out


def friends_of(pk: int) -> list[int]:
    return friend_pks(pk)


def friends_of_players(pks: list[int]) -> dict[int, list[int]]:
    """Several players' friends at once (one thread hop for a process's stale friend lists)."""
    return {pk: friend_pks(pk) for pk in pks}


def rank_text(me: LiveStanding | None) -> str:
    body: dict = {"type": "rank", "rank": me.rank if me else None, "score": me.score if me else None}
    if me is not None and me.subscores is not None:  # as a player's HTTP read carries them
        body["subscores"] = me.subscores
    return json.dumps(body, separators=(",", ":"))


def passed_text(by: LiveStanding, me: LiveStanding) -> str:
    body = {"type": "passed", "by": {"player": by.player, "display_name": by.display_name}, "rank": me.rank}
    return json.dumps(body, separators=(",", ":"))


_STATE_PREFIXES = {'{"type":"top"': "top", '{"type":"rank"': "rank"}  # as the texts above are built


def state_kind(text: str) -> str | None:
    """`top` or `rank` for a state message (a later one of the same kind makes an unsent one
    obsolete), None for `passed` (an event: each one is news)."""
    return _STATE_PREFIXES.get(text.partition(",")[0])


def player_messages(
    pk: int, friends: set[int], before: dict[int, LiveStanding] | None, after: dict[int, LiveStanding]
) -> list[str]:
    """What a player's socket is told when the board changed from `before` to `after` (None:
    nothing sent yet): their rank when it or the score moved, then one `passed` per friend who
    was behind them (or not on the board) and is now ahead."""
    me = after.get(pk)
    out: list[str] = []
    old = before.get(pk) if before is not None else None
    if before is None or _moved(old, me):
        out.append(rank_text(me))
    if before is None or old is None or me is None:
        return out
    overtakers = [
        after[f]
        for f in friends
        if f in after and after[f].position < me.position and (f not in before or before[f].position > old.position)
    ]
    for by in sorted(overtakers, key=lambda s: s.position, reverse=True):
        out.append(passed_text(by, me))
    return out


def _moved(old: LiveStanding | None, new: LiveStanding | None) -> bool:
    if old is None or new is None:
        return (old is None) != (new is None)
    # sub-scores too: a better tuple of the same score is news even where the rank stays
    return (old.rank, old.score, old.subscores) != (new.rank, new.score, new.subscores)
