"""The suite's board fixture: N players with realistic values and a few ties COPYed into the
bench database (fast enough for 10M), friend lists, the sorted set built by the real rebuild
(timed: the rebuild rate and Redis bytes per member), deep cursors and player tokens."""

from __future__ import annotations

import argparse
import math
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import redis
from psycopg import sql

from bench import environment
from bench.report import Laps

HISTORY_DAYS = 365  # values were reached at a random second of the last year
TIED_SHARE = 0.005  # players who share their value and second with another (same match, same score)
BIG_FRIENDS = 1000  # the largest friend list of docs/api.md §7: the friends (1000) scenario
BIG_FRIEND_PLAYERS = 100  # players who have that many (fewer on small boards)
TOP_LIMIT = 100  # a top page: top-cursor's cursors leave a full page below them
CURSOR_DEPTH = 1_000_000  # top-cursor: pages that continue from a cursor this deep (or the board's last page)
CURSOR_SPREAD = 10_000  # ... at depths drawn from the CURSOR_SPREAD entries above it
CURSOR_COUNT = 200  # distinct cursors
COPY_CHUNK = 50_000  # rows per COPY write


@dataclass(frozen=True)
class Values:
    """N (value, reached_at unix seconds, encoded) triples; index i belongs to player pk i + 1."""

    values: list[int]
    seconds: list[int]
    encoded: list[int]


@dataclass
class Fixture:
    """What the load needs once the data is in: who reads, with which credentials."""

    players: int
    board: environment.BoardInfo
    values: list[int]  # player pk i + 1's value on the board's `all` window
    tokens: dict[int, str]  # player pk -> bearer token (the rank pool and the friend-list owners)
    rank_pool: list[int]
    friend_owners: list[int]
    big_friend_owners: list[int]  # players with BIG_FRIENDS friends
    tied_pks: list[int]
    cursors: list[str]  # top-cursor: cursors of entries near cursor_depth
    cursor_depth: int  # the deepest entry a cursor names (1-based)
    setup: dict[str, Any]  # timings and counts, for the JSON


def set_up(
    args: argparse.Namespace, board_slug: str, env: environment.BenchEnv, pg: psycopg.Connection, r: redis.Redis
) -> Fixture:
    """Fill the prepared bench database and Redis db: players, values, friendships, the board; mint tokens."""
    rng = random.Random(args.seed)
    laps = Laps(2)
    timings, step = laps.seconds, laps.mark

    env.setup_django()  # the measured code's scores/ and boards/, imported below
    from rediskit.client import get_redis

    if (db := int(get_redis().connection_pool.connection_kwargs.get("db", 0))) != environment.BENCH_REDIS_DB:
        raise environment.BenchError(f"Django's Redis is db {db}, expected {environment.BENCH_REDIS_DB}")
    game = environment.game_id(pg)
    board = environment.board_info(pg, board_slug)
    environment.log(f"generating {args.players:,} values")
    values = generate_values(board, args.players, rng)
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
    from scores.auth import make_player_token, player_token_generations_mirror
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
    # as minting does (scores/services.py player_token_issue): the generation's mirror in Redis,
    # so a player's own read's board script finds it from a token's first read (docs/api.md §3.2)
    player_token_generations_mirror(dict.fromkeys(tokens, 0))
    step("tokens")
    release_django_connections()
    counts = Counter(values.encoded)
    tied_pks = [i + 1 for i, e in enumerate(values.encoded) if counts[e] > 1]
    tied = len(tied_pks)
    environment.log(
        f"ready: {args.players:,} players ({tied:,} in ties), {len(lists):,} with {args.friends} friends, "
        f"{len(tokens):,} tokens; setup {sum(timings.values()):.0f} s"
    )
    return Fixture(
        players=args.players,
        board=board,
        values=values.values,
        tokens=tokens,
        rank_pool=rank_pool,
        friend_owners=sorted(lists),
        big_friend_owners=sorted(big_lists),
        tied_pks=tied_pks,
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


def generate_values(shape: environment.BoardInfo, n: int, rng: random.Random) -> Values:
    """Values for players 1..N: a rating-like spread (log-normal, median 50,000, clamped to the board's bounds), so equal
    values are common and the time tie-break matters; each reached at a random second of the
    last HISTORY_DAYS days. Identical (value, second) pairs almost never happen by chance, so
    TIED_SHARE of the players copy another's: two players of one match with the same score."""
    from scores import encoding  # of the measured code (on sys.path by then); needs no Django

    now = int(time.time())
    first = max(encoding.EPOCH_UNIX, now - HISTORY_DAYS * 86_400)
    median = math.log(50_000)
    values = [min(max(round(rng.lognormvariate(median, 1.0)), shape.min_score), shape.max_score) for _ in range(n)]
    seconds = [rng.randint(first, now) for _ in range(n)]
    for i in rng.sample(range(n), int(n * TIED_SHARE)):
        j = rng.randrange(n)
        values[i], seconds[i] = values[j], seconds[j]
    encoded = [encoding.encode(shape, v, datetime.fromtimestamp(s, UTC)) for v, s in zip(values, seconds, strict=True)]
    return Values(values, seconds, encoded)


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


Column = Callable[[int], str]  # row index -> the field in COPY text format


def _copy(cur: psycopg.Cursor, table: str, columns: dict[str, Column], rows: int) -> None:
    """COPY `rows` rows into `table`, filling the columns it has among `columns`.

    The schema moves with the code measured (--code): a column we do not know is left
    to its default, unless it is NOT NULL without one, which is refused by name."""
    cur.execute(
        "SELECT column_name, is_nullable = 'YES' OR column_default IS NOT NULL OR is_identity = 'YES' "
        "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = %s",
        (table,),
    )
    present = dict(cur.fetchall())
    unknown = sorted(name for name, optional in present.items() if not optional and name not in columns)
    if unknown:
        raise environment.BenchError(
            f"{table} has required columns the bench does not fill: {', '.join(unknown)} (bench/loading.py)"
        )
    names = [name for name in columns if name in present]
    fields = [columns[name] for name in names]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(n) for n in names)
    )
    with cur.copy(statement) as copy:
        for start in range(0, rows, COPY_CHUNK):
            copy.write(
                "".join("\t".join(f(i) for f in fields) + "\n" for i in range(start, min(rows, start + COPY_CHUNK)))
            )


def load_board(pg: psycopg.Connection, game: int, board: environment.BoardInfo, values: Values) -> dict[str, float]:
    """Empty the score tables, COPY players 1..N and their `all` values; return seconds per step."""
    n = len(values.encoded)
    laps = Laps(3)
    steps, step = laps.seconds, laps.mark

    environment.reset_scores(pg)
    step("truncate")
    # Updated a day ago: rows written long before the rebuild, so its catch-up pass replays none.
    updated = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    reached = [datetime.fromtimestamp(s, UTC).isoformat() for s in values.seconds]
    with pg.cursor() as cur:
        player_columns: dict[str, Column] = {
            "id": lambda i: str(i + 1),
            "game_id": lambda i: str(game),
            "external_id": lambda i: f"p{i + 1}",
            "display_name": lambda i: "",
            "created_at": lambda i: updated,
        }
        _copy(cur, "scores_player", player_columns, n)
        cur.execute("SELECT setval(pg_get_serial_sequence('scores_player', 'id'), %s)", (n,))
        step("copy_players")
        value_columns: dict[str, Column] = {
            "board_id": lambda i: str(board.id),
            "window": lambda i: "all",
            "player_id": lambda i: str(i + 1),
            "value": lambda i: str(values.values[i]),
            "reached_at": lambda i: reached[i],
            "encoded": lambda i: str(values.encoded[i]),
            "metadata": lambda i: "\\N",
            "latest_at": lambda i: reached[i],  # a best board's latest counted result is its best
            "updated_at": lambda i: updated,
        }
        _copy(cur, "scores_playervalue", value_columns, n)
        step("copy_values")
        cur.execute("ANALYZE scores_player")
        cur.execute("ANALYZE scores_playervalue")
        step("analyze")
    steps["total"] = round(sum(steps.values()), 3)
    return steps


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


def release_django_connections() -> None:
    """Close this process's Django connections (and pool), so they do not count against the servers'."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        conn.close()
        close_pool = getattr(conn, "close_pool", None)
        if callable(close_pool):
            close_pool()
