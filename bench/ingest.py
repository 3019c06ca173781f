"""The suite's ingest pieces: matches (MatchFactory), single and batch submissions (Scenario),
the projector's lag sampled during a window, and the checks after a writing scenario (every
acknowledged match durable in Postgres, the board's `all` sorted set equal to Postgres' values)."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
import redis

from bench import environment, loadgen
from bench.report import percentile

MIRROR_WAIT_SECONDS = 5.0  # docs/api.md §4.4 allows 1 s; a little slack for a loaded machine


def ended_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def match(match_id: str, player: str, board: str, score: int, ended_at: str | None = None) -> dict[str, Any]:
    """A match of one result, as every benchmark submits them."""
    result = {"player": player, "board": board, "score": score}
    return {"match_id": match_id, "ended_at": ended_at or ended_now(), "results": [result]}


@dataclass
class MatchFactory:
    """Matches of one result each: a random player among p1..pN, ended now, with a score from
    `score(pk)` or else uniform within the board's bounds (on an empty board: every player new)."""

    tag: str
    board: environment.BoardInfo
    players: int
    rng: random.Random
    score: Callable[[int], int] | None = None
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def matches(self, n: int) -> list[dict[str, Any]]:
        ended_at = ended_now()
        score = self.score or (lambda pk: self.rng.randint(self.board.min_score, self.board.max_score))
        pks = [self.rng.randint(1, self.players) for _ in range(n)]
        return [match(f"{self.tag}-{next(self.counter)}", f"p{pk}", self.board.slug, score(pk), ended_at) for pk in pks]


@dataclass(frozen=True)
class Scenario:
    """What one request carries: one match, or a {"matches": [...]} batch answered item by item."""

    name: str
    matches_per_request: int = 1
    batch: bool = False

    @property
    def path(self) -> str:
        return f"/api/v1/games/{environment.GAME_SLUG}/matches" + ("/batch" if self.batch else "")

    def request(self, factory: MatchFactory) -> loadgen.Request:
        matches = factory.matches(self.matches_per_request)
        payload: Any = {"matches": matches} if self.batch else matches[0]
        body = json.dumps(payload, separators=(",", ":")).encode()
        return loadgen.Request("POST", self.path, body, context=[m["match_id"] for m in matches], tag=self.name)


APPLY_WAIT_SECONDS = 120.0  # the projector's backlog after a batch scenario on a loaded machine


def wait_applied(pg: psycopg.Connection) -> dict[str, Any]:
    """Wait until the projector has applied everything stored (scores_pending is empty): the
    values the checks compare are only final then. Returns how long it took after the load."""
    started = time.monotonic()
    while True:
        pending = pg.execute("SELECT count(*) FROM scores_pending").fetchone()[0]  # type: ignore[index]
        waited = time.monotonic() - started
        if not pending or waited >= APPLY_WAIT_SECONDS:
            return {"ok": not pending, "pending_rows": pending, "caught_up_after_s": round(waited, 2)}
        time.sleep(0.05)


class LagSampler:
    """Samples the projector's lag (the age of the oldest pending row, scores_pending) every
    `every` seconds on a connection of its own while a scenario runs: `with LagSampler(url):`."""

    def __init__(self, database_url: str, every: float = 0.1) -> None:
        self.database_url = database_url
        self.every = every
        self.lags: list[float] = []
        self.pending: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lag-sampler", daemon=True)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as pg:
            while not self._stop.wait(self.every):
                count, age = pg.execute(
                    "SELECT count(*), COALESCE(extract(epoch FROM clock_timestamp() - min(created_at)), 0) "
                    "FROM scores_pending"
                ).fetchone()  # type: ignore[misc]
                self.pending.append(int(count))
                self.lags.append(float(age))

    def report(self) -> dict[str, Any]:
        lags = sorted(self.lags)
        return {
            "samples": len(lags),
            "max_s": round(lags[-1], 3) if lags else None,
            "p99_s": round(percentile(lags, 99), 3) if lags else None,
            "p50_s": round(percentile(lags, 50), 3) if lags else None,
            "max_pending_rows": max(self.pending, default=None),
        }


def check_writes(
    pg: psycopg.Connection, r: redis.Redis, board: environment.BoardInfo, acked: list[str], *, whole: bool
) -> dict[str, Any]:
    """Once the projector has applied everything stored: every acknowledged match is in
    scores_match (the tables were empty at the start), and the board's `all` sorted set holds
    Postgres' values (check_mirrored(); every player's, or with `whole` false only those of the
    players the matches wrote). The figures of each, and "check": "ok" or what failed."""
    game = environment.game_id(pg)
    applied = wait_applied(pg)
    found = pg.execute(
        "SELECT count(*) FROM scores_match WHERE game_id = %s AND match_id = ANY(%s)", (game, acked)
    ).fetchone()[0]  # type: ignore[index]
    stored = pg.execute("SELECT count(*) FROM scores_match WHERE game_id = %s", (game,)).fetchone()[0]  # type: ignore[index]
    missing = len(set(acked)) - found
    durable = {"ok": missing == 0, "acked": len(set(acked)), "stored": stored, "missing": missing}
    m = check_mirrored(pg, r, board, None if whole else (game, acked))
    figures = {"applied": applied, "durable": durable, "mirrored": m}
    failed = {
        "durable": f"MISSING {missing:,} of {durable['acked']:,}",
        "mirrored": f"MISMATCH pg={m['postgres_players']:,} redis={m['redis_members']:,} "
        f"differing={m['differing_scores']:,} outbox={m['outbox_rows']:,}",
        "applied": f"{applied['pending_rows']} rows pending",
    }
    if all(f["ok"] for f in figures.values()):
        return {**figures, "check": "ok"}
    return {**figures, "check": " / ".join(f"{k}: {'ok' if figures[k]['ok'] else v}" for k, v in failed.items())}


def check_mirrored(
    pg: psycopg.Connection, r: redis.Redis, board: environment.BoardInfo, touched: tuple[int, list[str]] | None = None
) -> dict[str, Any]:
    """The board's `all` sorted set holds Postgres' values: as many members as Postgres has
    players, each with Postgres' score. The scores compared are every player's, or with `touched`
    (game id, acknowledged match ids) only those of the players the matches wrote: reading both
    whole boards after every writing scenario takes minutes on a large board."""
    key = environment.board_set_key(board.id)
    deadline = time.monotonic() + MIRROR_WAIT_SECONDS
    while True:
        if touched is None:
            rows = pg.execute(
                "SELECT player_id, encoded FROM scores_playervalue WHERE board_id = %s AND \"window\" = 'all'",
                (board.id,),
            ).fetchall()
        else:
            rows = pg.execute(
                """
                SELECT v.player_id, v.encoded FROM scores_playervalue v
                WHERE v.board_id = %s AND v."window" = 'all' AND v.player_id IN (
                    SELECT r.player_id FROM scores_result r JOIN scores_match m ON m.id = r.match_id
                    WHERE m.game_id = %s AND m.match_id = ANY(%s))
                """,
                (board.id, *touched),
            ).fetchall()
        missing = differing = 0
        for start in range(0, len(rows), 10_000):
            chunk = rows[start : start + 10_000]
            scores = r.zmscore(key, [str(pk) for pk, _ in chunk])
            missing += sum(1 for sc in scores if sc is None)
            differing += sum(1 for (_, e), sc in zip(chunk, scores, strict=True) if sc is not None and int(sc) != e)
        total = environment.board_players(pg, board.id)
        members = int(r.zcard(key))
        state = {
            "key": key,
            "postgres_players": total,
            "redis_members": members,
            "players_checked": len(rows),
            "missing_in_redis": missing,
            "differing_scores": differing,
            "outbox_rows": pg.execute("SELECT count(*) FROM scores_boardoutbox").fetchone()[0],  # type: ignore[index]
            "ok": total == members and not missing and not differing,
        }
        if state["ok"] or time.monotonic() >= deadline:
            return state
        time.sleep(0.5)
