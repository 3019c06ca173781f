"""Settlement webhooks (docs/api.md §13, docs/competitions.md): the outbox written in a freeze's
transaction, and its delivery, signed, at least once, in order per board window, retried with
backoff for 24 h."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from competitions.models import WebhookDelivery, WebhookEvent, WebhookSecret
from competitions.settlement import deepest_rewarded, reward_for
from competitions.tournaments import tournament_of
from scores.models import Game
from scores.selectors import BoardConfig, cached_game_config
from seasons.models import FrozenStanding, StandingChange, WindowFreeze

log = logging.getLogger(__name__)

RETRY_FOR = timedelta(hours=24)
FIRST_RETRY_SECONDS = 30  # docs/api.md §13: the first retry within 60 s
MAX_RETRY_SECONDS = 3600
RESPONSE_KEPT = 500  # characters of a receiver's answer the admin shows


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
    re-freeze, one delivery per subscribed URL. Nothing when the game subscribes to none."""
    config = cached_game_config(board.game_slug, stale_ok=False)
    assert config is not None
    event_type = _event_type(board, freeze=freeze, previous=previous)
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


def _event_type(board: BoardConfig, *, freeze: WindowFreeze, previous: WindowFreeze | None) -> str:
    """A re-freeze is `window.refrozen`, whatever the window. The first freeze of a tournament's
    `all` window is its end (competitions.services.tournaments_close): `tournament.ended`, the
    one event of that freeze, so a receiver subscribed to both never gets the same final
    standings twice. Any other first freeze (a recurring tournament's day or week too) is
    `window.frozen`."""
    if previous is not None:
        return "window.refrozen"
    if freeze.window == "all" and tournament_of(board) is not None:
        return "tournament.ended"
    return "window.frozen"


def _kick() -> None:
    from competitions.tasks import deliver_webhooks

    deliver_webhooks.delay()


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


def webhooks_deliver(*, now: datetime | None = None, limit: int = 50) -> int:
    """Try the due deliveries, each the oldest pending one of its (url, board, window); returns
    how many were delivered. A delivery is taken with FOR UPDATE SKIP LOCKED and its outcome
    written in the same transaction: a worker killed mid-request leaves it pending (at least
    once; the receiver de-duplicates by X-Event-Id)."""
    delivered = 0
    while True:
        with transaction.atomic():
            row = _next_due(now or timezone.now())
            if row is None:
                return delivered
            delivered += _attempt(row, now or timezone.now())
        if delivered >= limit:
            return delivered


def _next_due(now: datetime) -> WebhookDelivery | None:
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT d.id FROM competitions_webhookdelivery d
            WHERE d.state = 'pending' AND d.next_attempt_at <= %s
              AND NOT EXISTS (
                SELECT 1 FROM competitions_webhookdelivery e
                WHERE e.url = d.url AND e.board_id = d.board_id AND e."window" = d."window"
                  AND e.state = 'pending' AND e.id < d.id
              )
            ORDER BY d.next_attempt_at, d.id
            LIMIT 1
            FOR UPDATE SKIP LOCKED
            """,
            [now],
        )
        found = cur.fetchone()
    return WebhookDelivery.objects.select_related("event").get(pk=found[0]) if found else None


def _attempt(delivery: WebhookDelivery, now: datetime) -> int:
    event = delivery.event
    secret_row = WebhookSecret.objects.filter(game_id=event.game_id).first()
    body = event.body.encode()
    status, answer = None, ""
    if secret_row is None:
        answer = "no webhook secret: run manage.py create_webhook_secret GAME"
    else:
        headers = {
            "Content-Type": "application/json",
            "X-Event-Id": str(event.id),
            "X-Event-Type": event.type,
            "X-Signature": signature(_secret(event.game_id, secret_row.salt), t=int(time.time()), body=body),
        }
        try:
            response = httpx.post(delivery.url, content=body, headers=headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS)
            status, answer = response.status_code, f"{response.status_code} {response.text[:RESPONSE_KEPT]}"
        except httpx.HTTPError as exc:
            answer = f"{type(exc).__name__}: {exc}"[:RESPONSE_KEPT]
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.last_status = status
    delivery.last_response = answer
    if status is not None and 200 <= status < 300:
        delivery.state = WebhookDelivery.State.DELIVERED
        delivery.delivered_at = now
    else:
        delay = min(FIRST_RETRY_SECONDS * 2 ** (delivery.attempts - 1), MAX_RETRY_SECONDS)
        delivery.next_attempt_at = now + timedelta(seconds=delay)
        if delivery.next_attempt_at > delivery.give_up_at:
            delivery.state = WebhookDelivery.State.FAILED
        log.warning("webhook %s to %s failed (attempt %d): %s", event.id, delivery.url, delivery.attempts, answer)
    delivery.save()
    return 1 if delivery.state == WebhookDelivery.State.DELIVERED else 0


def deliveries_redeliver(*, ids: Sequence[int]) -> int:
    """Send these deliveries again (delivered ones too: the receiver de-duplicates), from now,
    with another 24 h of retries."""
    now = timezone.now()
    return WebhookDelivery.objects.filter(id__in=list(ids)).update(
        state=WebhookDelivery.State.PENDING, next_attempt_at=now, give_up_at=now + RETRY_FOR
    )
