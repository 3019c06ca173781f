"""The suite's reads: the read scenarios (top, rank, friends, ...), emptying and warming caches
before a window, the servers' settings overlay, and the spot check of 20 players' ranks and two
friend lists against Postgres."""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench import environment, loadgen
from bench.loading import TOP_LIMIT, Fixture
from bench.server import ServerProcess, http_request

OVERLAY_DIR = environment.BENCH_DIR / "django_overlay"  # bench_settings.py, bench_urls.py
BARE_PATH = "/bench/bare"
NAIVE_RANK_PATH = "/bench/naive-rank"
AROUND = 5
# The servers' read throttles, raised so that they never answer 429 while they still run, and cost,
# on every token read.
THROTTLE_RATE = "100000000/min"
CHECK_PLAYERS = 20
CHECK_TIED = 5  # of the CHECK_PLAYERS, drawn among tied players: the last tie-break is checked too
CHECK_FRIEND_LISTS = 2


def clear_caches(r: redis.Redis) -> int:
    """Empty the bench Redis db of everything but the boards (lb:*): the shared cache (top pages,
    profiles, player ids, friend lists) and the throttles' histories. Returns keys removed."""
    environment.bench_db_only(r, "clear")
    doomed = [k for k in r.scan_iter(count=10_000) if not k.startswith(b"lb:")]
    for start in range(0, len(doomed), 10_000):
        r.unlink(*doomed[start : start + 10_000])
    return len(doomed)


# --------------------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    """A kind of read: the request for one target (a player pk, an offset), a random target for
    each request of the window, and the targets read once beforehand to warm the caches."""

    name: str
    build: Callable[[int], loadgen.Request]  # called right before sending; context = the request's headers
    pick: Callable[[], int]
    warm_targets: Sequence[int] = ()

    def request(self) -> loadgen.Request:
        """The next request of the window, tagged with the scenario's name (mixed keeps latencies per tag)."""
        req = self.build(self.pick())
        req.tag = self.name
        return req


def scenarios(fx: Fixture, rng: random.Random) -> dict[str, Scenario]:
    base = f"/api/v1/games/{environment.GAME_SLUG}/boards/{fx.board.slug}"

    def get(path: str, token_of: int | None = None) -> loadgen.Request:
        headers = [] if token_of is None else [("Authorization", f"Bearer {fx.tokens[token_of]}")]
        return loadgen.Request("GET", path, b"", headers=headers)

    def friends(pk: int) -> loadgen.Request:
        return get(f"{base}/players/p{pk}/friends", pk)

    # players are p1..pN (bench/loading.py load_board)
    all_scenarios = [
        Scenario("bare", lambda _: get(BARE_PATH), lambda: 0),
        Scenario(
            "naive-sql",
            lambda pk: get(f"{NAIVE_RANK_PATH}?board={fx.board.id}&player={pk}"),
            lambda: rng.randint(1, fx.players),
        ),
        Scenario("top", lambda _: get(f"{base}/top?limit={TOP_LIMIT}"), lambda: 0),
        # Warm: the profiles of every cursor's page cached (pages stay cached one second only).
        Scenario(
            "top-cursor",
            lambda i: get(f"{base}/top?limit={TOP_LIMIT}&cursor={fx.cursors[i]}"),
            lambda: rng.randrange(len(fx.cursors)),
            warm_targets=range(len(fx.cursors)),
        ),
        Scenario(
            "rank",
            lambda pk: get(f"{base}/players/p{pk}?around={AROUND}", pk),
            lambda: rng.choice(fx.rank_pool),
            fx.rank_pool,
        ),
        Scenario("friends", friends, lambda: rng.choice(fx.friend_owners), fx.friend_owners),
        Scenario("friends-1000", friends, lambda: rng.choice(fx.big_friend_owners), fx.big_friend_owners),
    ]
    return {s.name: s for s in all_scenarios}


async def _warm(port: int, scenario: Scenario, concurrency: int) -> Counter[str]:
    """Request every warm target once (no measurement): the caches a steady state would hold."""
    pending = list(reversed(scenario.warm_targets))
    statuses: Counter[str] = Counter()

    async def worker() -> None:
        conn = loadgen.HttpConnection("127.0.0.1", port)
        try:
            while pending:
                # built when sent: signatures carry the time
                _, outcome = await loadgen.send(conn, scenario.build(pending.pop()), timeout=120)
                statuses[outcome] += 1
        finally:
            await conn.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return statuses


def warm_caches(port: int, scenario: Scenario, concurrency: int) -> dict[str, Any]:
    started = time.perf_counter()
    with asyncio.Runner(loop_factory=loadgen.event_loop_factory()) as runner:
        statuses = runner.run(_warm(port, scenario, concurrency))
    seconds = time.perf_counter() - started
    bad = {k: v for k, v in statuses.items() if not k.startswith("2")}
    if bad:
        environment.log(f"warning: warming the caches for {scenario.name} got {bad}")
    return {"requests": sum(statuses.values()), "seconds": round(seconds, 2), "statuses": dict(statuses)}


# --------------------------------------------------------------------------- correctness


def _get_signed(server: ServerProcess, key: environment.ServerKey, path: str) -> dict[str, Any]:
    status, body = http_request(server.port, "GET", path, headers=loadgen.signed_headers(key, "GET", path))
    if status != 200:
        raise environment.BenchError(f"GET {path}: HTTP {status} {body[:300]!r}")
    return json.loads(body)


def check_server(
    server: ServerProcess, key: environment.ServerKey, pg: psycopg.Connection, fx: Fixture, rng: random.Random
) -> dict[str, Any]:
    """The running server's answers against Postgres: rank, score and total of CHECK_PLAYERS
    players (signed reads; CHECK_TIED of them tied, so the last tie-break is checked too), and the
    whole friends board of CHECK_FRIEND_LISTS owners. Ranks are the board order of docs/api.md §6
    straight from scores_playervalue: 1 + players with a larger encoded score + players with the
    same one and a smaller id in byte order."""
    board = fx.board
    base = f"/api/v1/games/{environment.GAME_SLUG}/boards/{board.slug}"
    total = environment.board_players(pg, board.id)
    tied = rng.sample(fx.tied_pks, min(CHECK_TIED, len(fx.tied_pks)))
    others = [pk for pk in rng.sample(range(1, fx.players + 1), CHECK_PLAYERS) if pk not in tied]
    checked = tied + others[: CHECK_PLAYERS - len(tied)]
    mismatches: list[str] = []
    for pk in checked:
        value, rank = pg.execute(
            """
            SELECT me.value,
                   1 + (SELECT count(*) FROM scores_playervalue v
                        WHERE v.board_id = me.board_id AND v."window" = 'all' AND v.encoded > me.encoded)
                     + (SELECT count(*) FROM scores_playervalue v JOIN scores_player p ON p.id = v.player_id
                        WHERE v.board_id = me.board_id AND v."window" = 'all' AND v.encoded = me.encoded
                          AND p.external_id COLLATE "C" < mine.external_id COLLATE "C")
            FROM scores_playervalue me JOIN scores_player mine ON mine.id = me.player_id
            WHERE me.board_id = %s AND me."window" = 'all' AND me.player_id = %s
            """,
            (board.id, pk),
        ).fetchone()  # type: ignore[misc]
        got = _get_signed(server, key, f"{base}/players/p{pk}?around=0")
        want = {"rank": int(rank), "score": int(value), "total": total}
        seen = {k: got.get(k) for k in want}
        if seen != want or got.get("degraded"):
            mismatches.append(f"p{pk}: API {seen}{' degraded' if got.get('degraded') else ''}, Postgres {want}")
    owners = rng.sample(fx.friend_owners, min(CHECK_FRIEND_LISTS, len(fx.friend_owners)))
    friend_ranks: dict[int, dict[str, int]] = {}  # owner -> {external id: board rank} of the owner and friends
    if owners:
        rows = pg.execute(
            """
            WITH ordered AS (
                SELECT v.player_id, p.external_id,
                       row_number() OVER (ORDER BY v.encoded DESC, p.external_id COLLATE "C") AS rank
                FROM scores_playervalue v JOIN scores_player p ON p.id = v.player_id
                WHERE v.board_id = %s AND v."window" = 'all'
            ), members AS (
                SELECT o AS owner, o AS player_id FROM unnest(%s::bigint[]) o
                UNION ALL
                SELECT f.player_id, f.friend_id FROM scores_friendship f WHERE f.player_id = ANY(%s)
            )
            SELECT m.owner, o.external_id, o.rank FROM members m JOIN ordered o ON o.player_id = m.player_id
            """,
            (board.id, owners, owners),
        ).fetchall()
        for owner, external_id, rank in rows:
            friend_ranks.setdefault(int(owner), {})[external_id] = int(rank)
    for owner, want_ranks in friend_ranks.items():
        got = _get_signed(server, key, f"{base}/players/p{owner}/friends")
        seen_ranks = {e["player"]: e["board_rank"] for e in got["entries"]}
        positions = [e["rank"] for e in got["entries"]]
        if seen_ranks != want_ranks or positions != list(range(1, len(positions) + 1)):
            differing = sorted(
                p for p in want_ranks.keys() | seen_ranks.keys() if want_ranks.get(p) != seen_ranks.get(p)
            )
            mismatches.append(
                f"friends of p{owner}: {len(seen_ranks)} entries, Postgres {len(want_ranks)}; "
                f"board_rank differs for {differing[:5]}"
            )
    return {
        "ok": not mismatches,
        "players_checked": len(checked),
        "friend_lists_checked": len(friend_ranks),
        "mismatches": mismatches,
    }


def correct_text(check: dict[str, Any]) -> str:
    if check["ok"]:
        return "ok"
    return "MISMATCH " + "; ".join(check["mismatches"][:5])


def server_env() -> dict[str, str]:
    """On top of the bench environment: the overlay settings (adds /bench/bare) and raised throttles."""
    python_path = os.pathsep.join(p for p in (str(OVERLAY_DIR), os.environ.get("PYTHONPATH", "")) if p)
    return {
        "PYTHONPATH": python_path,
        "DJANGO_SETTINGS_MODULE": "bench_settings",
        "THROTTLE_PLAYER_READS": THROTTLE_RATE,
        "THROTTLE_ADDRESS_READS": THROTTLE_RATE,
        "THROTTLE_PUBLIC_READS": THROTTLE_RATE,  # nginx's limit on the cached reads too (scripts/web.py)
        "THROTTLE_WEBSOCKETS": THROTTLE_RATE,
        # group commit as `make run` has it (scripts/run.py): the append service, a socket per run
        "WEB_APPEND_SERVICE": "1",
        "WEB_APPEND_SOCKET": str(Path(tempfile.gettempdir()) / f"leaderboard-bench-append-{os.getpid()}.sock"),
    }
