"""Gentle live demo traffic: signed matches posted over real HTTP to a running server, a few
per second, so the boards move (`manage.py demo_traffic`, started by `make run`)."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.utils import timezone

from demo.names import DEMO_SLUG, demo_match
from scores.auth import sign


@dataclass
class TrafficStats:
    sent: int = 0  # matches posted and answered 2xx
    accepted: int = 0
    held: int = 0
    rejected: int = 0  # refused by the server (4xx, or rejected inside a batch)
    errors: int = 0  # could not reach the server, or 5xx (retried)
    new_players: int = 0


def _post(base: str, path: str, body: bytes, key_id: str, secret: str, timeout: float = 5.0) -> tuple[int, Any]:
    """POST a signed JSON body; returns (status, parsed JSON or text). Raises (OSError,
    http.client.HTTPException) when the server cannot be reached or answers garbage."""
    full_path = urlsplit(base).path.rstrip("/") + path
    request = urllib.request.Request(
        base.rstrip("/") + path,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-Key-Id": key_id,
            "X-Signature": sign(secret, "POST", full_path, body),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")[:200]


def healthy(base: str, timeout: float = 3.0) -> bool:
    try:
        with urllib.request.urlopen(base.rstrip("/") + "/healthz", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def wait_healthy(base: str, stop: threading.Event, say: Callable[[str], None], limit: float = 60.0) -> bool:
    """Poll /healthz with backoff until it answers 200, for about `limit` seconds."""
    deadline = time.monotonic() + limit
    delay = 0.25
    while not stop.is_set():
        if healthy(base):
            return True
        if time.monotonic() >= deadline:
            say(f"{base}/healthz still not answering 200 after {limit:.0f} s; sending anyway (errors are retried)")
            return False
        stop.wait(delay)
        delay = min(delay * 2, 5.0)
    return False


def traffic_loop(
    *,
    base: str,
    key_id: str,
    secret: str,
    players: list[str],
    rate: float,
    stop: threading.Event,
    say: Callable[[str], None],
    rng: random.Random | None = None,
    log_every: float = 10.0,
) -> TrafficStats:
    """Post matches at about `rate` per second until `stop` is set. Never raises for the
    server's sake: unreachable or 5xx is logged and the same body retried with backoff
    (match_id makes the retry idempotent); a 4xx is logged and dropped."""
    rng = rng or random.Random()
    stats = TrafficStats()
    path = f"/api/v1/games/{DEMO_SLUG}/matches"
    pending: tuple[str, bytes, int] | None = None  # (path, body, matches in it)
    backoff = 0.0
    next_at = time.monotonic()
    last_log, logged = time.monotonic(), TrafficStats()
    last_refusal_said = -float("inf")
    while not stop.is_set():
        if pending is None:
            known = len(players)
            now = timezone.now()
            if rng.random() < 0.05:
                batch = [demo_match(rng, players, now) for _ in range(rng.randint(2, 6))]
                pending = (path + "/batch", json.dumps({"matches": batch}).encode(), len(batch))
            else:
                pending = (path, json.dumps(demo_match(rng, players, now)).encode(), 1)
            stats.new_players += len(players) - known
        target, body, count = pending
        try:
            status, answer = _post(base, target, body, key_id, secret)
        except Exception as exc:  # refused, reset, timed out, garbled: all mean "try again"
            status, answer = 0, f"{exc.__class__.__name__}: {getattr(exc, 'reason', exc)}"
        if status == 0 or status >= 500:
            stats.errors += 1
            backoff = min(max(backoff * 2, 1.0), 10.0)
            say(f"POST {target} failed ({status or 'unreachable'}: {answer}); retrying in {backoff:.0f} s")
            stop.wait(backoff)
            continue
        backoff, pending = 0.0, None
        if status >= 400:
            stats.rejected += count
            if time.monotonic() - last_refusal_said >= log_every:  # a revoked key must not flood the log
                say(f"POST {target} refused: {status} {answer}")
                last_refusal_said = time.monotonic()
        else:
            items = answer.get("results", []) if isinstance(answer, dict) and target.endswith("/batch") else [answer]
            for item in items:
                s = item.get("status") if isinstance(item, dict) else None
                stats.accepted += s == "accepted"
                stats.held += s == "held"
                stats.rejected += s == "rejected"
            stats.sent += count
        if time.monotonic() - last_log >= log_every:
            say(
                f"last {time.monotonic() - last_log:.0f} s: {stats.sent - logged.sent} matches sent "
                f"({stats.accepted - logged.accepted} accepted, {stats.held - logged.held} held, "
                f"{stats.rejected - logged.rejected} rejected, {stats.errors - logged.errors} errors, "
                f"{stats.new_players - logged.new_players} new players); total {stats.sent}"
            )
            last_log, logged = time.monotonic(), TrafficStats(**vars(stats))
        next_at = max(next_at + rng.expovariate(rate) * count, time.monotonic() - 1.0)
        stop.wait(max(0.0, next_at - time.monotonic()))
    return stats
