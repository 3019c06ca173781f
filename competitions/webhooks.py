"""Settlement webhooks (docs/api.md §13, docs/competitions.md): the outbox written in a freeze's
transaction, and its delivery, signed, at least once, in order per board window, retried with
backoff for 24 h."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import json
import logging
import secrets
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
from django.conf import settings
from django.db import DatabaseError, connection, connections, transaction
from django.utils import timezone

from competitions.models import FeedCursor, WebhookDelivery, WebhookEvent, WebhookSecret
from competitions.receivers import Refused, vetted_addresses
from competitions.settlement import deepest_rewarded, reward_for
from competitions.tournaments import tournament_of
from scores import events
from scores.models import Game
from scores.selectors import BoardConfig, cached_game_config
from seasons.models import FrozenStanding, StandingChange, WindowFreeze

log = logging.getLogger(__name__)

RETRY_FOR = timedelta(hours=24)
FIRST_RETRY_SECONDS = 30  # docs/api.md §13: the first retry within 60 s
MAX_RETRY_SECONDS = 3600
RESPONSE_KEPT = 500  # characters of a receiver's answer the admin shows
KICK_EXPIRES_SECONDS = 5.0


def webhook_secret_create(*, game: Game) -> str:
    """A new signing secret for the game's webhooks (the old one stops verifying); shown once."""
    salt = secrets.token_hex(16)
    WebhookSecret.objects.update_or_create(game=game, defaults={"salt": salt})
    return _secret(game.id, salt)


def _secret(game_id: int, salt: str) -> str:
    mac = hmac.new(settings.SERVER_KEY_PEPPER.encode(), f"webhook:v1:{game_id}:{salt}".encode(), hashlib.sha256)
    return mac.hexdigest()


def signature(secret: str, *, t: int, body: bytes) -> str:
    """`X-Signature` as docs/api.md §13 says: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`."""
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


# --- the outbox, in the freeze's transaction ------------------------------------------------


def webhook_events_write(board: BoardConfig, *, freeze: WindowFreeze, previous: WindowFreeze | None) -> None:
    """Called by seasons' freeze hook inside the freeze's transaction: one event per freeze or
    re-freeze, in the events feed (scores/events.py) and, for each subscribed URL, one delivery."""
    config = cached_game_config(board.game_slug, stale_ok=False)
    assert config is not None
    event_type = _event_type(board, freeze=freeze, previous=previous)
    data = (
        {"board": board.slug}
        if event_type == events.TOURNAMENT_ENDED
        else {"board": board.slug, "window": freeze.window, "version": freeze.version}
    )
    events.events_draft(
        game_id=board.game_id, events=[events.event(event_type, data, at=events.event_at(freeze.frozen_at))]
    )
    urls = [h["url"] for h in (config.game.webhooks or []) if event_type in h["events"]]
    if not urls:
        return
    event_id = uuid.uuid4()
    body: dict[str, Any] = {
        "id": str(event_id),
        "type": event_type,
        "game": board.game_slug,
        "board": board.slug,
        "window": freeze.window,
        "version": freeze.version,
        "frozen_at": freeze.frozen_at.isoformat().replace("+00:00", "Z"),
        "standings_url": (
            f"{settings.PUBLIC_BASE_URL}/api/v1/games/{board.game_slug}/boards/{board.slug}/standings/"
            f"{quote(freeze.window, safe=':')}?version={freeze.version}"
        ),
        "rewards": _rewards(board, freeze),
    }
    if previous is not None:
        body["changes"] = _changes(board, freeze=freeze, previous=previous)
    raw = json.dumps(body, separators=(",", ":"), sort_keys=True)
    event = WebhookEvent.objects.create(
        id=event_id,
        game_id=board.game_id,
        board_id=board.id,
        window=freeze.window,
        version=freeze.version,
        type=event_type,
        body=raw,
    )
    now = timezone.now()
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            event=event,
            url=url,
            board_id=board.id,
            window=freeze.window,
            next_attempt_at=now,
            give_up_at=now + RETRY_FOR,
        )
        for url in urls
    )
    transaction.on_commit(_kick, robust=True)


# --- the events feed's low-volume types (docs/api.md §13.1), pulled from the feed -------------

FEED_PULL_CHUNKS = 100  # chunks holding such events read per game and run


def webhooks_feed_pull() -> int:
    """Deliveries for the events of the feed a game's [[webhooks]] subscribe to (match
    decisions, league moves: scores.events.PUSHED), read after the game's FeedCursor and
    written with the cursor's move in one transaction: each event gets its deliveries once. A
    game's cursor starts where its feed ends when it is first seen subscribing (a new
    subscription is not sent the past). Returns how many events were written. Run by the
    delivery task before it delivers (every 5 s)."""
    written = 0
    for game in Game.objects.exclude(webhooks=[]):
        hooks = [h for h in game.webhooks or [] if set(h["events"]) & set(events.PUSHED)]
        if not hooks:
            continue
        try:
            written += _feed_pull_game(game, hooks)
        except DatabaseError:  # one game's failure is its own: the others' events still go out
            log.exception("webhook pull of %s's events feed failed; tried again on the next run", game.slug)
    return written


def _feed_pull_game(game: Game, hooks: list[dict[str, Any]]) -> int:
    with transaction.atomic():
        cursor = FeedCursor.objects.select_for_update().filter(game=game).first()
        if cursor is None:
            end = events.events_end(game_id=game.id)
            FeedCursor.objects.get_or_create(game=game, defaults={"pos": end.pos, "idx": end.idx})
            return 0
        found, last = events.events_pushed(
            game_id=game.id, after=events.Cursor(cursor.pos, cursor.idx), chunks=FEED_PULL_CHUNKS
        )
        config = cached_game_config(game.slug, stale_ok=False)
        boards = config.boards if config else {}
        now = timezone.now()
        for position, event in found:
            urls = [h["url"] for h in hooks if event["type"] in h["events"]]
            if not urls:
                continue
            board = boards.get(event["data"].get("board", ""))
            event_id = uuid.uuid4()
            body = {"id": str(event_id), "type": event["type"], "game": game.slug, "at": event["at"],
                    "data": event["data"], "feed_id": str(position)}  # fmt: skip
            row = WebhookEvent.objects.create(
                id=event_id, game=game, board_id=board.id if board else None, window="", version=0,
                type=event["type"], body=json.dumps(body, separators=(",", ":"), sort_keys=True),
            )  # fmt: skip
            WebhookDelivery.objects.bulk_create(
                WebhookDelivery(
                    event=row,
                    url=url,
                    board_id=row.board_id,
                    window="",
                    next_attempt_at=now,
                    give_up_at=now + RETRY_FOR,
                )  # fmt: skip
                for url in urls
            )
        if last != events.Cursor(cursor.pos, cursor.idx):
            FeedCursor.objects.filter(game=game).update(pos=last.pos, idx=last.idx)
    return len(found)


def _event_type(board: BoardConfig, *, freeze: WindowFreeze, previous: WindowFreeze | None) -> str:
    """A re-freeze is `window.refrozen`, whatever the window. The first freeze of a tournament's
    `all` window is its end (competitions.services.tournaments_close): `tournament.ended`, the
    one event of that freeze, so a receiver subscribed to both never gets the same final
    standings twice. Any other first freeze (a recurring tournament's day or week too) is
    `window.frozen`."""
    if previous is not None:
        return events.WINDOW_REFROZEN
    if freeze.window == "all" and tournament_of(board) is not None:
        return events.TOURNAMENT_ENDED
    return events.WINDOW_FROZEN


def _kick() -> None:
    from competitions.tasks import deliver_webhooks

    # beat runs it every 5 s anyway: a kick still queued by then is dropped, never piled up
    deliver_webhooks.apply_async(expires=KICK_EXPIRES_SECONDS)


def _rewards(board: BoardConfig, freeze: WindowFreeze) -> list[dict[str, Any]]:
    if not board.rewards:
        return []
    depth = deepest_rewarded(board.rewards, entries=freeze.entries)
    rows = (
        FrozenStanding.objects.using("default")
        .filter(freeze=freeze, position__lte=depth)
        .order_by("position")
        .values_list("rank", "player__external_id")
    )
    out = []
    for rank, player in rows:
        reward = reward_for(board.rewards, rank=rank, entries=freeze.entries)
        if reward is not None:
            out.append({"player": player, "rank": rank, "reward": reward})
    return out


def _changes(board: BoardConfig, *, freeze: WindowFreeze, previous: WindowFreeze) -> list[dict[str, Any]]:
    rows = (
        StandingChange.objects.using("default")
        .filter(freeze=freeze)
        .order_by("new_rank", "old_rank", "player__external_id")
        .values_list("player__external_id", "old_rank", "new_rank")
    )
    return [
        {
            "player": player,
            "from_rank": old,
            "to_rank": new,
            "reward_before": reward_for(board.rewards, rank=old, entries=previous.entries),
            "reward_after": reward_for(board.rewards, rank=new, entries=freeze.entries),
        }
        for player, old, new in rows
        if old != new
        or reward_for(board.rewards, rank=old, entries=previous.entries)
        != reward_for(board.rewards, rank=new, entries=freeze.entries)
    ]


# --- delivery -------------------------------------------------------------------------------
#
# docs/competitions.md, "Delivery": a due delivery is claimed by a conditional UPDATE that leases
# it (its next_attempt_at moved past the attempt's deadline, a claim token written) and commits;
# the POST runs outside any transaction; its outcome is written only where the claim still
# holds. A run sends to the games with due deliveries concurrently (asyncio), one delivery at a
# time per game, so a receiver that never answers holds only its own game's deliveries.

ANSWER_MAX_BYTES = 64 * 1024  # docs/api.md §13: at most this much of a receiver's answer is read
LEASE_MARGIN_SECONDS = 5.0  # a lease outlasts the attempt's deadline by this: time to write the outcome
RUN_SECONDS = 30.0  # a run starts no attempt after this long; the next run (beat, every 5 s) goes on
POLL_SECONDS = 0.5  # while attempts are in flight, how often a run looks for other games' due work


@dataclass(frozen=True)
class _Claimed:
    id: int
    token: uuid.UUID
    url: str
    attempts: int
    give_up_at: datetime
    event_id: uuid.UUID
    event_type: str
    body: str
    game_id: int


@dataclass(frozen=True)
class _Outcome:
    status: int | None
    answer: str


def webhooks_deliver(*, now: datetime | None = None, limit: int = 50) -> int:
    """Try the due deliveries, each the oldest pending one of its (url, board, window), the games
    concurrently; returns how many were delivered. Stops starting attempts after `limit`
    deliveries or RUN_SECONDS. `now` (tests) fixes the clock the rows are compared with.

    At least once: a worker killed mid-attempt leaves the delivery pending, leased; it is due
    again when the lease ends (the receiver de-duplicates by X-Event-Id)."""
    return asyncio.run(_Run(now=now, limit=limit).main())


class _Run:
    def __init__(self, *, now: datetime | None, limit: int) -> None:
        self.fixed_now, self.limit = now, limit
        self.deadline = float(settings.WEBHOOK_TIMEOUT_SECONDS)
        self.delivered = 0
        self.started = time.monotonic()
        # Django's connections are per thread and synchronous: the run's SQL goes through one
        # thread of its own (short statements, never held across an attempt)
        self.db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webhook-db")

    def now(self) -> datetime:
        return self.fixed_now or timezone.now()

    def open(self) -> bool:
        return self.delivered < self.limit and time.monotonic() - self.started < RUN_SECONDS

    async def sql(self, fn: Callable[..., Any], /, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.db, functools.partial(fn, **kwargs))

    async def main(self) -> int:
        try:
            async with httpx.AsyncClient(
                trust_env=False,  # no proxy from the environment: the vetted address is what is reached
                follow_redirects=False,  # docs/api.md §13: a 3xx is a failed attempt
                timeout=self.deadline,
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
            ) as client:
                self.client = client
                games: dict[int, asyncio.Task[None]] = {}
                while True:
                    if self.open():
                        for game_id in await self.sql(_due_games, now=self.now(), busy=list(games)):
                            games[game_id] = asyncio.create_task(self.game(game_id))
                    if not games:
                        return self.delivered
                    await asyncio.wait(games.values(), timeout=POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
                    for game_id, task in list(games.items()):
                        if task.done():
                            del games[game_id]
                            if task.exception() is not None:
                                log.error("webhook deliveries of game %s stopped", game_id, exc_info=task.exception())
        finally:
            await self.sql(connections.close_all)
            self.db.shutdown(wait=True)

    async def game(self, game_id: int) -> None:
        while self.open():
            claimed = await self.sql(
                _claim, game_id=game_id, now=self.now(), lease=timedelta(seconds=self.deadline + LEASE_MARGIN_SECONDS)
            )
            if claimed is None:
                return
            outcome = await self.attempt(claimed)
            if await self.sql(_record, claimed=claimed, outcome=outcome, now=self.now()):
                self.delivered += 1

    async def attempt(self, claimed: _Claimed) -> _Outcome:
        salt = await self.sql(_salt_of, game_id=claimed.game_id)
        if salt is None:
            return _Outcome(None, "no webhook secret: run manage.py create_webhook_secret GAME")
        body = claimed.body.encode()
        headers = {
            "Content-Type": "application/json",
            "X-Event-Id": str(claimed.event_id),
            "X-Event-Type": claimed.event_type,
            "X-Signature": signature(_secret(claimed.game_id, salt), t=int(time.time()), body=body),
        }
        try:
            async with asyncio.timeout(self.deadline):  # DNS, connect, send and read, all in
                return await _post(self.client, claimed.url, body=body, headers=headers)
        except TimeoutError:
            return _Outcome(None, f"timed out: no complete answer within {self.deadline:g} s")
        except Refused as exc:
            return _Outcome(None, f"refused, nothing sent: {exc} (docs/competitions.md, Receivers)")
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            return _Outcome(None, f"{type(exc).__name__}: {exc}")


async def _post(client: httpx.AsyncClient, url: str, *, body: bytes, headers: dict[str, str]) -> _Outcome:
    """POST to a vetted address of `url`'s host (the next one when a connection is refused: the
    request was not sent), keeping the name in Host and, for https, in the TLS server name the
    certificate is checked against; at most ANSWER_MAX_BYTES of the answer read."""
    target = httpx.URL(url)
    addresses = await vetted_addresses(target)
    headers = {**headers, "Host": target.netloc.decode("ascii"), "Accept-Encoding": "identity"}
    extensions = {"sni_hostname": target.raw_host.decode("ascii")} if target.scheme == "https" else {}
    for i, address in enumerate(addresses):
        pinned = target.copy_with(host=address)
        try:
            return await _exchange(client, pinned, body=body, headers=headers, extensions=extensions)
        except httpx.ConnectError:
            if i == len(addresses) - 1:
                raise
    raise AssertionError("unreachable: vetted_addresses returns at least one address")


async def _exchange(
    client: httpx.AsyncClient, pinned: httpx.URL, *, body: bytes, headers: dict[str, str], extensions: dict[str, str]
) -> _Outcome:
    kept = bytearray()
    async with client.stream("POST", pinned, content=body, headers=headers, extensions=extensions) as response:
        async for chunk in response.aiter_raw():  # undecoded: what is counted is what was read
            kept += chunk
            if len(kept) >= ANSWER_MAX_BYTES:
                break  # the rest is never read: leaving the block closes the connection
    text = bytes(kept[:RESPONSE_KEPT]).decode("utf-8", "replace")
    cut = " [answer cut at 64 KiB]" if len(kept) >= ANSWER_MAX_BYTES else ""
    return _Outcome(response.status_code, f"{response.status_code} {text}{cut}")


_ORDER = """
    NOT EXISTS (
        SELECT 1 FROM competitions_webhookdelivery e
        WHERE e.url = d.url AND e.board_id IS NOT DISTINCT FROM d.board_id AND e."window" = d."window"
          AND e.state = 'pending' AND e.id < d.id
    )"""


def _due_games(*, now: datetime, busy: list[int]) -> list[int]:
    """The games with a delivery due now (not counting those the run is already sending to)."""
    with connection.cursor() as cur:
        cur.execute(
            f"""
            SELECT DISTINCT ev.game_id FROM competitions_webhookdelivery d
            JOIN competitions_webhookevent ev ON ev.id = d.event_id
            WHERE d.state = 'pending' AND d.next_attempt_at <= %s AND NOT (ev.game_id = ANY(%s)) AND {_ORDER}
            """,
            [now, busy],
        )
        return [row[0] for row in cur.fetchall()]


def _claim(*, game_id: int, now: datetime, lease: timedelta) -> _Claimed | None:
    """The game's next due delivery, leased in one conditional UPDATE that commits on its own:
    while leased it is not due (and, pending, still holds back the later deliveries of its
    board window)."""
    token = uuid.uuid4()
    with connection.cursor() as cur:
        cur.execute(
            f"""
            WITH next AS (
                SELECT d.id FROM competitions_webhookdelivery d
                JOIN competitions_webhookevent ev ON ev.id = d.event_id
                WHERE ev.game_id = %(game)s AND d.state = 'pending' AND d.next_attempt_at <= %(now)s AND {_ORDER}
                ORDER BY d.next_attempt_at, d.id
                LIMIT 1
                FOR UPDATE OF d SKIP LOCKED
            )
            UPDATE competitions_webhookdelivery d
            SET next_attempt_at = %(until)s, claim = %(token)s
            FROM next, competitions_webhookevent ev
            WHERE d.id = next.id AND ev.id = d.event_id
            RETURNING d.id, d.url, d.attempts, d.give_up_at, ev.id, ev.type, ev.body, ev.game_id
            """,
            {"game": game_id, "now": now, "until": now + lease, "token": token},
        )
        row = cur.fetchone()
    if row is None:
        return None
    return _Claimed(row[0], token, *row[1:])


def _salt_of(*, game_id: int) -> str | None:
    return WebhookSecret.objects.filter(game_id=game_id).values_list("salt", flat=True).first()


def _record(*, claimed: _Claimed, outcome: _Outcome, now: datetime) -> bool:
    """Write an attempt's outcome where the claim still holds (a redelivery from the admin, or a
    lease that ran out and was claimed again, takes the row from it); True when delivered."""
    attempts = claimed.attempts + 1
    fields: dict[str, Any] = {
        "attempts": attempts,
        "last_attempt_at": now,
        "last_status": outcome.status,
        "last_response": outcome.answer,
        "claim": None,
    }
    delivered = outcome.status is not None and 200 <= outcome.status < 300
    if delivered:
        fields |= {"state": WebhookDelivery.State.DELIVERED, "delivered_at": now, "next_attempt_at": now}
    else:
        delay = min(FIRST_RETRY_SECONDS * 2 ** (attempts - 1), MAX_RETRY_SECONDS)
        fields["next_attempt_at"] = now + timedelta(seconds=delay)
        if fields["next_attempt_at"] > claimed.give_up_at:
            fields["state"] = WebhookDelivery.State.FAILED
        log.warning("webhook %s to %s failed (attempt %d): %s", claimed.event_id, claimed.url, attempts, outcome.answer)
    written = WebhookDelivery.objects.filter(
        pk=claimed.id, claim=claimed.token, state=WebhookDelivery.State.PENDING
    ).update(**fields)
    if not written:
        log.warning(
            "webhook %s to %s: the attempt's claim was taken over; outcome not written", claimed.event_id, claimed.url
        )
    return bool(written) and delivered


def deliveries_redeliver(*, ids: Sequence[int]) -> int:
    """Send these deliveries again (delivered ones too: the receiver de-duplicates), from now,
    with another 24 h of retries."""
    now = timezone.now()
    # claim=None: an attempt still in flight does not write its outcome over the redelivery
    return WebhookDelivery.objects.filter(id__in=list(ids)).update(
        state=WebhookDelivery.State.PENDING, next_attempt_at=now, give_up_at=now + RETRY_FOR, claim=None
    )
