"""Gentle live demo traffic: signed matches posted over real HTTP to a running server, a few
per second, so the boards move (`manage.py demo_traffic`, started by `make run`).

Every RIVALRY_EVERY seconds one match is a rivalry around the demo login (demo.names.DEMO_LOGIN):
the traffic reads the login's friends' board (a signed GET, as a game server may) and either has
one of the friends just behind it pass it (the login's page shows "... passed you") or, when a friend is
just ahead, has the login climb back past them. Boards take turns, the rating board every other
time, so a signed-in demo login sees a pass on its rating board about every half minute."""

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
from leaderboard_client.signing import sign

from demo.names import DEMO_LOGIN, DEMO_SLUG, demo_match, match_results, rfc3339


@dataclass
class TrafficStats:
    sent: int = 0  # matches posted and answered 2xx
    accepted: int = 0
    held: int = 0
    rejected: int = 0  # refused by the server (4xx, or rejected inside a batch)
    errors: int = 0  # could not reach the server, or 5xx (retried)
    new_players: int = 0
    rivalries: int = 0  # rivalry matches around the demo login


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


def _get(base: str, path: str, key_id: str, secret: str, timeout: float = 5.0) -> tuple[int, Any]:
    """GET a path signed with the server key; (status, parsed JSON or None)."""
    full_path = urlsplit(base).path.rstrip("/") + path
    headers = {"X-Key-Id": key_id, "X-Signature": sign(secret, "GET", full_path, b"")}
    request = urllib.request.Request(base.rstrip("/") + path, method="GET", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (OSError, ValueError):
        return 0, None


# --- rivalry around the demo login -----------------------------------------------------------

RIVALRY_EVERY = 8.0  # seconds between rivalry matches
RIVALRY_BOARDS = ("rating", "speedrun", "rating", "kills")  # in turn


@dataclass(frozen=True)
class BoardRule:
    """What a rivalry needs to know of a board (its configuration, read once at start)."""

    order: str
    mode: str
    min_score: int
    max_score: int


def passing_score(rule: BoardRule, rng: random.Random, mover: int, target: int) -> int | None:
    """A result that takes a player with value `mover` just past one with value `target` (the
    amount a total board adds; the new best on a best board), or None if no allowed score can.
    Steps are small, so hours of rivalry move the login's circle only a little up the board."""
    if rule.mode == "total":
        score = max(target - mover + rng.randint(1, 3), rule.min_score, 1)
    elif rule.order == "desc":
        score = target + rng.randint(1, 4)
    else:
        score = target - rng.randint(20, 300)
    return score if rule.min_score <= score <= rule.max_score else None


def rivalry_results(
    rng: random.Random, board: str, rule: BoardRule, entries: list[dict[str, Any]], login: str = DEMO_LOGIN
) -> list[dict[str, Any]] | None:
    """The results of a rivalry match on `board`, from the login's friends' board `entries`
    (docs/api.md §5, in board order): one of the three friends just behind passes the login, or, when an
    entry ahead is marked `passed_login` (the friend who passed it last), the login climbs back
    past that friend. None: nothing to do."""
    mine = next((i for i, e in enumerate(entries) if e["player"] == login), None)
    if mine is None:  # no score in this window yet: the login plays
        friends = [e["player"] for e in entries][:2]
        return match_results(rng, [login, *friends], board=board) if friends else None
    me = entries[mine]
    above = entries[mine - 1] if mine > 0 else None
    behind = entries[mine + 1 : mine + 4]  # one of the nearest three behind passes: not always the same friend
    rng.shuffle(behind)
    passer = next((e for e in entries[:mine] if e.get("passed_login")), None)
    moves = []
    if passer is not None:
        moves.append((login, me, passer))
    moves += [(e["player"], e, me) for e in behind]
    if above is not None:
        moves.append((login, me, above))
    for mover, mover_entry, target in moves:
        score = passing_score(rule, rng, mover_entry["score"], target["score"])
        if score is not None:
            return [{"player": mover, "board": board, "score": score}]
    return None


class Rivalry:
    """Whose turn it is: which board, and on each board the friend who passed the login last
    (then the login climbs back past them next time, so the two alternate)."""

    def __init__(self, rules: dict[str, BoardRule], login: str = DEMO_LOGIN, every: float = RIVALRY_EVERY) -> None:
        self.rules = {b: r for b, r in rules.items() if b in RIVALRY_BOARDS}
        self.every = every
        self.login = login
        self.turn = 0
        self.passed: dict[str, str] = {}  # board -> the friend who passed the login there last

    def body(self, rng: random.Random, read: Callable[[str], list[dict[str, Any]] | None]) -> dict[str, Any] | None:
        """The next rivalry match body; `read(board)` gives the login's friends' board entries."""
        boards = [b for b in RIVALRY_BOARDS if b in self.rules]
        if not boards:
            return None
        board = boards[self.turn % len(boards)]
        self.turn += 1
        entries = read(board)
        if entries is None:
            return None
        passer = self.passed.pop(board, None)
        entries = [{**e, "passed_login": True} if e["player"] == passer else e for e in entries]
        results = rivalry_results(rng, board, self.rules[board], entries, self.login)
        if not results:
            return None
        if results[0]["player"] != self.login:
            self.passed[board] = results[0]["player"]
        match_id = f"rival-{rng.getrandbits(64):016x}"
        return {"match_id": match_id, "ended_at": rfc3339(timezone.now()), "results": results}


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
    rivalry: Rivalry | None = None,
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
    next_rivalry = time.monotonic() + 1.0

    def friends_of_login(board: str) -> list[dict[str, Any]] | None:
        assert rivalry is not None
        status, answer = _get(
            base, f"/api/v1/games/{DEMO_SLUG}/boards/{board}/players/{rivalry.login}/friends?window=all", key_id, secret
        )
        return answer.get("entries") if status == 200 and isinstance(answer, dict) else None

    while not stop.is_set():
        if pending is None and rivalry is not None and time.monotonic() >= next_rivalry:
            next_rivalry = time.monotonic() + rivalry.every
            body = rivalry.body(rng, friends_of_login)
            if body is not None:
                pending = (path, json.dumps(body).encode(), 1)
                stats.rivalries += 1
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
                f"{stats.new_players - logged.new_players} new players, "
                f"{stats.rivalries - logged.rivalries} rivalries around {DEMO_LOGIN}); total {stats.sent}"
            )
            last_log, logged = time.monotonic(), TrafficStats(**vars(stats))
        next_at = max(next_at + rng.expovariate(rate) * count, time.monotonic() - 1.0)
        stop.wait(max(0.0, next_at - time.monotonic()))
    return stats
