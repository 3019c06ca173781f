"""The suite's read pieces: the board fixture (N players COPYed with realistic values and a few
ties, friend lists, the sorted set built by the real rebuild, player tokens), the read
scenarios (top, rank, friends, ...), emptying and warming caches before a window, and the spot
check of 20 players' ranks against Postgres. bench/suite.py runs them; bench/README.md says how.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench import environment, loadgen
from bench.loading import COPY_CHUNK, Values, load_board
from bench.report import Laps
from bench.server import ServerProcess

OVERLAY_DIR = environment.BENCH_DIR / "django_overlay"  # bench_settings.py, bench_urls.py
SETTINGS_MODULE = "bench_settings"
BARE_PATH = "/bench/bare"
NAIVE_RANK_PATH = "/bench/naive-rank"
TOP_LIMIT = 100
CURSOR_DEPTH = 1_000_000  # top-cursor: pages that continue from a cursor this deep (or the board's last page)
CURSOR_SPREAD = 10_000  # ... at depths drawn from the CURSOR_SPREAD entries above it
CURSOR_COUNT = 200  # distinct cursors
AROUND = 5
BIG_FRIENDS = 1000  # the largest friend list of docs/api.md §7: the friends (1000) scenario
BIG_FRIEND_PLAYERS = 100  # players who have that many (fewer on small boards)
HISTORY_DAYS = 365  # values were reached at a random second of the last year
TIED_SHARE = 0.005  # players who share their value and second with another (same match, same score)
CHECK_PLAYERS = 20
CHECK_TIED = 5  # of the CHECK_PLAYERS, drawn among tied players: the last tie-break is checked too
CHECK_FRIEND_LISTS = 2


# --------------------------------------------------------------------------- data


def generate_values(shape: environment.BoardInfo, n: int, rng: random.Random) -> tuple[Values, int]:
    """Values for players 1..N and how many players share their encoded score with another.

    A rating-like spread (log-normal, median 50,000, clamped to the board's bounds), so equal
    values are common and the time tie-break matters; each reached at a random second of the
    last HISTORY_DAYS days. Identical (value, second) pairs almost never happen by chance, so
    TIED_SHARE of the players copy another's: two players of one match with the same score."""
    from scores import encoding  # of the measured code (on sys.path by then); needs no Django

    if shape.mode != "best" or shape.order != "desc":
        raise environment.BenchError(f"the board must be desc/best (bench/game.toml), not {shape.order}/{shape.mode}")
    now = int(time.time())
    first = max(encoding.EPOCH_UNIX, now - HISTORY_DAYS * 86_400)
    median = math.log(50_000)
    values = [min(max(round(rng.lognormvariate(median, 1.0)), shape.min_score), shape.max_score) for _ in range(n)]
    seconds = [rng.randint(first, now) for _ in range(n)]
    for i in rng.sample(range(n), int(n * TIED_SHARE)):
        j = rng.randrange(n)
        values[i], seconds[i] = values[j], seconds[j]
    encoded = [encoding.encode(shape, v, datetime.fromtimestamp(s, UTC)) for v, s in zip(values, seconds, strict=True)]
    counts = Counter(encoded)
    tied = sum(c for c in counts.values() if c > 1)
    return Values(values, seconds, encoded), tied


def friend_lists(
    n: int, players: int, friends: int, rng: random.Random, avoid: frozenset[int] = frozenset()
) -> dict[int, list[int]]:
    """`players` random players (pks 1..n, none in `avoid`), each with `friends` distinct friends
    among the others.

    Friends are drawn outside the chosen players (and `avoid`: the owners of other lists), so
    each has exactly `friends` (a friend may be drawn by several). Pairs are unique, never a
    player with itself."""
    chosen = rng.sample(sorted(set(range(1, n + 1)) - avoid) if avoid else range(1, n + 1), players)
    excluded = set(chosen) | avoid
    lists: dict[int, list[int]] = {}
    for pk in chosen:
        picked: set[int] = set()
        while len(picked) < friends:
            candidate = rng.randint(1, n)
            if candidate not in excluded:
                picked.add(candidate)
        lists[pk] = sorted(picked)
    return lists


def load_friendships(pg: psycopg.Connection, lists: dict[int, list[int]]) -> int:
    """COPY both directions of every friendship (friendship is mutual: both rows always exist)."""
    rows = [pair for owner, friends in lists.items() for f in friends for pair in ((owner, f), (f, owner))]
    with pg.cursor() as cur:
        cur.execute("TRUNCATE scores_friendship RESTART IDENTITY")
        with cur.copy("COPY scores_friendship (player_id, friend_id) FROM STDIN") as copy:
            for start in range(0, len(rows), COPY_CHUNK):
                copy.write("".join(f"{a}\t{b}\n" for a, b in rows[start : start + COPY_CHUNK]))
        cur.execute("ANALYZE scores_friendship")
    return len(rows)


@dataclass
class Fixture:
    """What the load needs once the data is in: who reads, with which credentials."""

    players: int
    tokens: dict[int, str]  # player pk -> bearer token (the rank pool and the friend-list owners)
    rank_pool: list[int]
    friend_owners: list[int]
    tied_pks: list[int]
    big_friend_owners: list[int] = field(default_factory=list)  # players with BIG_FRIENDS friends
    setup: dict[str, Any] = field(default_factory=dict)  # timings and counts, for the JSON
    values: list[int] = field(default_factory=list)  # player pk i + 1's value on the board's `all` window
    board: environment.BoardInfo | None = None
    cursors: list[str] = field(default_factory=list)  # top-cursor: cursors of entries near cursor_depth
    cursor_depth: int = 0  # the deepest entry a cursor names (1-based)


def deep_cursors(r: redis.Redis, set_key: str, players: int, rng: random.Random) -> tuple[list[str], int]:
    """Cursors of entries CURSOR_DEPTH deep (the last full page on smaller boards), read from the
    board's sorted set: a cursor is a position, (encoded score, player id), not an offset."""
    from boards.cursor import cursor_at

    deepest = min(CURSOR_DEPTH, players - TOP_LIMIT)
    if deepest < 1:
        return [], 0
    depths = sorted({rng.randint(max(1, deepest - CURSOR_SPREAD), deepest) for _ in range(CURSOR_COUNT)})
    pipe = r.pipeline(transaction=False)
    for depth in depths:
        pipe.zrevrange(set_key, depth - 1, depth - 1, withscores=True)
    cursors = [cursor_at(int(score), f"p{int(member)}") for [(member, score)] in pipe.execute()]
    return cursors, deepest


def _django(env: environment.BenchEnv) -> None:
    """Configure Django in this process for the bench database and Redis db 2 (the bench environment)."""
    env.setup_django()
    from rediskit.client import get_redis

    service_db = int(get_redis().connection_pool.connection_kwargs.get("db", 0))
    if service_db != environment.BENCH_REDIS_DB:
        raise environment.BenchError(f"Django's Redis is db {service_db}, expected {environment.BENCH_REDIS_DB}")


def release_django_connections() -> None:
    """Close this process's Django connections (and pool), so they do not count against the servers'."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close()
        close_pool = getattr(conn, "close_pool", None)
        if callable(close_pool):
            close_pool()


def set_up(args: argparse.Namespace, env: environment.BenchEnv, pg: psycopg.Connection, r: redis.Redis) -> Fixture:
    """Fill the prepared bench database and Redis db: players, values, friendships, the board; mint tokens."""
    rng = random.Random(args.seed)
    laps = Laps(2)
    timings, step = laps.seconds, laps.mark

    environment.flush_redis(r)
    _django(env)  # the measured code's scores/ and boards/, imported below
    game = environment.game_id(pg)
    board = environment.board_info(pg, args.board)
    environment.log(f"generating {args.players:,} values")
    values, tied = generate_values(board, args.players, rng)
    step("generate")
    environment.log(f"COPYing {args.players:,} players and their `all` values into {environment.BENCH_DB_NAME}")
    load_steps = load_board(pg, game, board, values)
    step("copy_values")
    lists = friend_lists(args.players, args.friend_players, args.friends, rng)
    # a few players with the largest list docs/api.md §7 allows (friends (1000)), apart from the others
    big_owners = min(BIG_FRIEND_PLAYERS, max(0, (args.players - len(lists) - BIG_FRIENDS) // 10))
    big_lists = friend_lists(args.players, big_owners, BIG_FRIENDS, rng, avoid=frozenset(lists)) if big_owners else {}
    friendship_rows = load_friendships(pg, {**lists, **big_lists})
    step("copy_friendships")
    environment.log(f"{friendship_rows:,} friendship rows; rebuilding board {board.slug} through boards_rebuild")
    from boards import services as board_services
    from scores.auth import make_player_token
    from scores.models import Board

    board_obj = Board.objects.get(id=board.id)
    memory_before = int(r.info("memory")["used_memory"])
    rebuild_started = time.perf_counter()
    # every board of the bench game (the others are empty): only a complete rebuild sets the index
    # marker, without which the servers answer every read degraded, from Postgres
    report = board_services.boards_rebuild(boards=[board_obj, *Board.objects.exclude(id=board.id)])
    rebuild_seconds = time.perf_counter() - rebuild_started
    memory_after = int(r.info("memory")["used_memory"])
    set_key = environment.board_set_key(board.id)
    members = int(r.zcard(set_key))
    if members != args.players:
        raise environment.BenchError(f"the rebuilt board holds {members:,} members, expected {args.players:,}")
    memory = {
        "key": set_key,
        "members": members,
        "used_memory_delta": memory_after - memory_before,
        "bytes_per_member_used_memory": (memory_after - memory_before) / members,
        "memory_usage": int(r.memory_usage(set_key, samples=0) or 0),
    }
    memory["bytes_per_member_memory_usage"] = memory["memory_usage"] / members
    step("rebuild")
    cursors, cursor_depth = deep_cursors(r, set_key, args.players, rng)
    rank_pool = rng.sample(range(1, args.players + 1), min(args.token_pool, args.players))
    expires_at = datetime.now(UTC) + timedelta(days=1)
    tokens = {pk: make_player_token(game, pk, expires_at, f"p{pk}") for pk in {*rank_pool, *lists, *big_lists}}
    step("tokens")
    release_django_connections()
    counts = Counter(values.encoded)
    tied_pks = [i + 1 for i, e in enumerate(values.encoded) if counts[e] > 1]
    environment.log(
        f"ready: {args.players:,} players ({tied:,} in ties), {len(lists):,} with {args.friends} friends, "
        f"{len(tokens):,} tokens; setup {sum(timings.values()):.0f} s"
    )
    return Fixture(
        players=args.players,
        tokens=tokens,
        rank_pool=rank_pool,
        friend_owners=sorted(lists),
        big_friend_owners=sorted(big_lists),
        tied_pks=tied_pks,
        values=values.values,
        board=board,
        cursors=cursors,
        cursor_depth=cursor_depth,
        setup={
            "seconds": timings,
            "copy_steps_seconds": load_steps,
            "values": {
                "distribution": "log-normal, median 50,000, sigma 1.0, clamped to the board's bounds",
                "reached_at": f"uniform over the last {HISTORY_DAYS} days, whole seconds",
                "distinct_values": len(set(values.values)),
                "distinct_encoded": len(counts),
                "players_in_ties": tied,
                "updated_at": "a day ago (the rebuild's catch-up replays none)",
            },
            "friendships": {
                "players": len(lists),
                "friends_each": args.friends,
                "players_with_1000": len(big_lists),
                "rows": friendship_rows,
            },
            "rebuild": {
                **{k: getattr(report, k) for k in ("boards", "windows", "entries", "caught_up", "seconds")},
                "wall_seconds": round(rebuild_seconds, 3),
                "entries_per_s": report.entries / rebuild_seconds,
            },
            "memory": memory,
            "tokens": len(tokens),
        },
    )


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
        return self.build(self.pick())


def scenarios(fx: Fixture, board: str, rng: random.Random) -> dict[str, Scenario]:
    base = f"/api/v1/games/{environment.GAME_SLUG}/boards/{board}"

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
                req = scenario.build(pending.pop())  # built when sent: signatures carry the time
                try:
                    statuses[str((await conn.request(req)).status)] += 1
                except (OSError, asyncio.IncompleteReadError, loadgen.HttpError) as exc:
                    statuses[exc.__class__.__name__] += 1
                    await conn.close()
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


def _http_get_signed(server: ServerProcess, key: environment.ServerKey, path: str) -> dict[str, Any]:
    request = urllib.request.Request(
        server.base_url + path,
        headers={"X-Key-Id": key.key_id, "X-Signature": loadgen.sign(key.secret, "GET", path, b"")},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body: dict[str, Any] = json.loads(response.read())
            return body
    except urllib.error.HTTPError as exc:
        raise environment.BenchError(f"GET {path}: HTTP {exc.code} {exc.read()[:300]!r}") from None


@dataclass(frozen=True)
class Expected:
    """What Postgres says, computed once for every server."""

    ranks: dict[int, tuple[int, int]]  # pk -> (rank, value) for the checked players
    friend_ranks: dict[int, dict[str, int]]  # owner pk -> {external id: board rank} of the owner and friends
    total: int


def expected_from_postgres(
    pg: psycopg.Connection, board: environment.BoardInfo, fx: Fixture, rng: random.Random
) -> Expected:
    """Ranks the board order of docs/api.md §6 gives, straight from scores_playervalue: 1 + players
    with a larger encoded score + players with the same one and a smaller id in byte order."""
    tied = rng.sample(fx.tied_pks, min(CHECK_TIED, len(fx.tied_pks)))
    others = [pk for pk in rng.sample(range(1, fx.players + 1), CHECK_PLAYERS) if pk not in tied]
    checked = tied + others[: CHECK_PLAYERS - len(tied)]
    ranks: dict[int, tuple[int, int]] = {}
    for pk in checked:
        row = pg.execute(
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
        ).fetchone()
        assert row is not None
        ranks[pk] = (int(row[1]), int(row[0]))
    owners = rng.sample(fx.friend_owners, min(CHECK_FRIEND_LISTS, len(fx.friend_owners)))
    friend_ranks: dict[int, dict[str, int]] = {}
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
    return Expected(ranks, friend_ranks, environment.board_players(pg, board.id))


def check_server(
    server: ServerProcess, key: environment.ServerKey, board: environment.BoardInfo, expected: Expected
) -> dict[str, Any]:
    """The running server's answers against Postgres: ranks, scores and totals of the checked
    players (signed reads), and the whole friends board of a few owners."""
    base = f"/api/v1/games/{environment.GAME_SLUG}/boards/{board.slug}"
    mismatches: list[str] = []
    for pk, (rank, value) in expected.ranks.items():
        got = _http_get_signed(server, key, f"{base}/players/p{pk}?around=0")
        want = {"rank": rank, "score": value, "total": expected.total}
        seen = {k: got.get(k) for k in want}
        if seen != want or got.get("degraded"):
            mismatches.append(f"p{pk}: API {seen}{' degraded' if got.get('degraded') else ''}, Postgres {want}")
    for owner, want_ranks in expected.friend_ranks.items():
        got = _http_get_signed(server, key, f"{base}/players/p{owner}/friends")
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
        "players_checked": len(expected.ranks),
        "friend_lists_checked": len(expected.friend_ranks),
        "mismatches": mismatches,
    }


def correct_text(check: dict[str, Any]) -> str:
    if check["ok"]:
        return "ok"
    return "MISMATCH " + "; ".join(check["mismatches"][:5])


def server_env(args: argparse.Namespace) -> dict[str, str]:
    """On top of the bench environment: the overlay settings (adds /bench/bare) and raised throttles."""
    python_path = os.pathsep.join(p for p in (str(OVERLAY_DIR), os.environ.get("PYTHONPATH", "")) if p)
    return {
        "PYTHONPATH": python_path,
        "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE,
        "THROTTLE_PLAYER_READS": args.throttle_rate,
        "THROTTLE_ADDRESS_READS": args.throttle_rate,
        # group commit as `make run` has it (scripts/run.py): the append service, a socket per run
        "WEB_APPEND_SERVICE": "1",
        "WEB_APPEND_SOCKET": str(Path(tempfile.gettempdir()) / f"leaderboard-bench-append-{os.getpid()}.sock"),
    }
