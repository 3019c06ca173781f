"""Demo data for `make run`: a demo game with a realistic history, and gentle live traffic.

demo_load() bulk-loads players, matches and results of the last HISTORY_DAYS days with
Postgres COPY, derives every player's value per board and window in Python with the very
functions the ingest path uses (windows_for, encoding.encode, total_reached_at), copies
those in too, then rebuilds the demo boards' sorted sets. It never calls the ingest service
per match: 30k matches load in seconds (most of them spent by Postgres on index upkeep).

demo_traffic() posts signed matches over real HTTP to a running server, a few per second,
so the boards move. demo_match() builds one such match body.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import random
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from scores import encoding
from scores.accounts import demo_accounts_create, demo_accounts_missing
from scores.auth import sign
from scores.config import parse_game_config
from scores.ingest import MatchIn, ResultIn
from scores.models import Board, Game, Player, PlayerValue
from scores.projection.values import total_reached_at
from scores.selectors import GameConfig, game_config
from scores.services import game_config_apply
from scores.windows import windows_for

DEMO_SLUG = "demo"
DEMO_CONFIG = Path(settings.BASE_DIR) / "games" / "demo.toml"
KEY_NAME = "demo-traffic"
HISTORY_DAYS = 45
LOCK_ID = 0x6C62_6465_6D6F  # pg advisory lock: one demo_load at a time

# --- names -------------------------------------------------------------------------------

_SYLLABLES = (
    "ka", "ri", "to", "mi", "an", "el", "zu", "ra", "no", "vi", "sa", "lo", "ne", "ko", "ta", "ly",
    "mar", "dan", "vel", "tor", "kin", "shi", "bel", "dra", "gor", "fen", "ix", "or", "ul", "yo",
    "ste", "qua", "zan", "mor", "len", "tha", "rin", "bo", "ju", "fa",
)  # fmt: skip
_TAGS = ("x", "pro", "gg", "tv", "ttv", "zz", "jr", "ace", "fox", "owl", "wolf", "byte")
_CHARACTERS = ("Nyx", "Brakk", "Solene", "Ivo", "Mara", "Tesk", "Oru", "Vela")
_ROUTES = ("any%", "any%", "any%", "glitchless", "100%")


def display_name(rng: random.Random) -> str:
    """A pronounceable gamer name from plain random syllables: "Korimar", "vel_tor42"..."""
    word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
    style = rng.random()
    if style < 0.45:
        return word.capitalize()
    if style < 0.65:
        return f"{word.capitalize()}{rng.randint(1, 999)}"
    if style < 0.8:
        return f"{word}_{rng.choice(_TAGS)}"
    if style < 0.92:
        other = "".join(rng.choice(_SYLLABLES) for _ in range(2))
        return f"{word.capitalize()} {other.capitalize()}"
    return f"x{word.capitalize()}x"


def player_external_id(n: int) -> str:
    return f"player-{n:06d}"


# --- how a player plays ------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A player's stable traits, derived from the player id alone (load and traffic agree)."""

    rating: float  # around 1500
    speedrun_ms: float  # median ~7 min, log-normal
    kills: float  # mean kills per match
    character: str


_NORMAL = statistics.NormalDist()


@lru_cache(maxsize=200_000)
def profile(external_id: str) -> Profile:
    digest = hashlib.blake2b(external_id.encode(), digest_size=16).digest()
    u = [(int.from_bytes(digest[i : i + 4], "big") + 0.5) / 2**32 for i in range(0, 16, 4)]
    z = [_NORMAL.inv_cdf(x) for x in u[:3]]
    return Profile(
        rating=1500 + 230 * z[0],
        speedrun_ms=420_000 * 2.718281828459045 ** (0.33 * z[1]),
        kills=max(0.5, 6.0 * 2.718281828459045 ** (0.45 * z[2])),
        character=_CHARACTERS[int(u[3] * len(_CHARACTERS))],
    )


def _clamp(value: float, low: int, high: int) -> int:
    return min(max(round(value), low), high)


def match_results(rng: random.Random, players: Sequence[str]) -> list[dict[str, Any]]:
    """The results of one match among `players` (2-10 distinct ids): a ranked fight (a rating
    for everyone), a deathmatch (kills for everyone) or a race (a time for each finisher, at
    least two)."""
    kind = rng.random()
    if kind < 0.4:
        return [
            {
                "player": p,
                "board": "rating",
                "score": _clamp(rng.gauss(profile(p).rating, 40), 0, 10_000_000),
                "metadata": {"character": profile(p).character},
            }
            for p in players
        ]
    if kind < 0.75:
        return [
            {
                "player": p,
                "board": "kills",
                "score": _clamp(rng.gauss(profile(p).kills, profile(p).kills ** 0.5), 0, 30),
            }
            for p in players
        ]
    route = rng.choice(_ROUTES)
    finishers = [p for p in players if rng.random() < 0.85]
    if len(finishers) < 2:
        finishers = list(players[:2])
    return [
        {
            "player": p,
            "board": "speedrun",
            "score": _clamp(profile(p).speedrun_ms * rng.lognormvariate(0, 0.08), 1000, 3_600_000),
            "metadata": {"route": route},
        }
        for p in finishers
    ]


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def demo_match(
    rng: random.Random, players: list[str], now: datetime, *, new_player_chance: float = 0.03
) -> dict[str, Any]:
    """One live match body (contract section 4) among 2-10 random `players`, ended now.

    Now and then one participant is a brand-new player (with a display name); it is appended
    to `players` so later matches can pick it again."""
    size = min(rng.randint(2, 10), len(players))
    chosen = rng.sample(players, size) if size >= 2 else list(players)
    names: dict[str, str] = {}
    if rng.random() < new_player_chance or len(chosen) < 2:
        newcomer = f"rookie-{rng.getrandbits(40):010x}"
        names[newcomer] = display_name(rng)
        players.append(newcomer)
        chosen = [*chosen[: max(1, size - 1)], newcomer]
    results = match_results(rng, chosen)
    for r in results:
        if r["player"] in names:
            r["display_name"] = names[r["player"]]
    return {"match_id": f"live-{rng.getrandbits(64):016x}", "ended_at": rfc3339(now), "results": results}


# --- bulk load ---------------------------------------------------------------------------


@dataclass
class LoadReport:
    loaded: bool = False
    players: int = 0
    matches: int = 0
    results: int = 0
    values: int = 0
    redis_entries: int = 0
    accounts: int = 0
    fk_checks_skipped: bool = False
    phases: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


class _Phases:
    def __init__(self, report: LoadReport) -> None:
        self.report, self.start = report, time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        self.report.phases[name] = now - self.start
        self.start = now


def demo_loaded() -> bool:
    return Player.objects.filter(game__slug=DEMO_SLUG).exists()


def demo_boards_missing_in_redis() -> list[Board]:
    """Demo boards whose all-time sorted set is absent although Postgres has values."""
    from boards import keys
    from boards.redis import get_redis

    r = get_redis()
    return [
        b
        for b in Board.objects.filter(game__slug=DEMO_SLUG)
        if not r.exists(keys.board_key(b.id, "all")) and PlayerValue.objects.filter(board=b, window="all").exists()
    ]


def _skip_fk_checks() -> bool:
    """Skip the per-row foreign-key checks for the rest of this transaction, if allowed.

    Every id the load writes was just read back from the rows it references, so the checks
    (about a third of the load time) cannot fail. session_replication_role needs a superuser,
    which development databases have; without one the checks simply run."""
    try:
        with transaction.atomic(), connection.cursor() as cur:  # a savepoint: a refusal is harmless
            cur.execute("SET LOCAL session_replication_role = replica")
    except DatabaseError:
        return False
    return True


def _bar(desc: str, total: int | None, enabled: bool, unit: str = "row"):
    """A progress bar on stderr, drawn only on a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=None if enabled else True, leave=True)


def demo_load(
    *, players: int = 100_000, matches: int = 30_000, seed: int = 1, now: datetime | None = None, progress: bool = True
) -> LoadReport:
    """Load the demo game once. Returns a report with loaded=False if it already had players."""
    from boards.services import boards_rebuild

    report = LoadReport()
    started = time.monotonic()
    phases = _Phases(report)
    now = (now or timezone.now()).replace(microsecond=0)
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_ID])
        if demo_loaded():
            return report
        report.fk_checks_skipped = _skip_fk_checks()
        game_config_apply(parse_game_config(DEMO_CONFIG.read_text(encoding="utf-8")))
        config = game_config(Game.objects.get(slug=DEMO_SLUG))
        phases.done("config")
        data = _generate(config, players, matches, seed, now, progress)
        phases.done("generate")
        values = _aggregate(config, data, progress)
        phases.done("aggregate")
        _copy_all(config, data, values, progress)
        phases.done("copy")
        report.players, report.matches, report.results, report.values = (
            len(data.ids),
            len(data.matches),
            sum(len(m.results) for m in data.matches),
            _count(values),
        )
        # every demo player can sign in to the web pages (username = player id; docs/players.md)
        report.accounts = demo_accounts_create(game_id=config.game.id)
        phases.done("accounts")
    phases.done("commit")
    with connection.cursor() as cur:
        cur.execute("ANALYZE scores_player, scores_match, scores_result, scores_playervalue")
    phases.done("analyze")
    with _bar("redis boards", report.values, progress, "value") as bar:
        rebuilt = boards_rebuild(boards=list(config.boards.values()), progress=bar.update)
    report.redis_entries = rebuilt.entries
    phases.done("redis")
    report.loaded = True
    report.seconds = time.monotonic() - started
    return report


@dataclass
class _Match:
    match_id: str
    ended_at: datetime
    received_at: datetime
    # (player index, board slug, score, metadata JSON or None)
    results: list[tuple[int, str, int, str | None]]
    body_hash: str = ""


@dataclass
class _Data:
    ids: list[str]
    names: list[str]
    created_at: list[datetime | None]
    matches: list[_Match]


# Europe/Paris evening peak: relative activity per local hour.
_HOURLY = (3, 2, 1, 1, 1, 1, 2, 3, 4, 5, 6, 6, 7, 7, 7, 8, 9, 11, 13, 15, 16, 15, 11, 6)


def _match_times(rng: random.Random, count: int, now: datetime, tz: str) -> list[datetime]:
    """`count` whole-second instants over the last HISTORY_DAYS days, more of them recently
    and in the local evening, all at least a minute in the past; sorted."""
    zone = ZoneInfo(tz)
    today = now.astimezone(zone).date()
    latest = now - timedelta(seconds=60)
    days = list(range(HISTORY_DAYS + 1))
    day_weights = list(itertools.accumulate(1.0 + 1.5 * (HISTORY_DAYS - d) / HISTORY_DAYS for d in days))
    hour_weights = list(itertools.accumulate(_HOURLY))
    out: list[datetime] = []
    while len(out) < count:
        day: date = today - timedelta(days=rng.choices(days, cum_weights=day_weights)[0])
        hour = rng.choices(range(24), cum_weights=hour_weights)[0]
        local = datetime(day.year, day.month, day.day, hour, rng.randrange(60), rng.randrange(60), tzinfo=zone)
        moment = local.astimezone(UTC)
        if moment <= latest and moment > now - timedelta(days=HISTORY_DAYS):
            out.append(moment)
    out.sort()
    return out


def _generate(config: GameConfig, n_players: int, n_matches: int, seed: int, now: datetime, progress: bool) -> _Data:
    rng = random.Random(seed)
    ids = [player_external_id(i) for i in range(1, n_players + 1)]
    names = [display_name(rng) for _ in range(n_players)]
    # Activity is heavy-tailed: a few players play a lot, most a little.
    activity = list(itertools.accumulate(rng.lognormvariate(0, 1.1) for _ in range(n_players)))
    total_activity = activity[-1] if activity else 0.0
    times = _match_times(rng, n_matches, now, config.game.reset_timezone)
    sizes = [rng.randint(2, min(10, n_players)) for _ in range(n_matches)] if n_players >= 2 else []
    # Everyone plays at least once when there are enough seats (a player exists because a
    # result named it); the other seats go to players by activity.
    seats = sum(sizes)
    everyone = list(range(n_players))
    rng.shuffle(everyone)
    first_seats = everyone[: min(n_players, seats)]
    spots = sorted(rng.sample(range(seats), len(first_seats))) if first_seats else []
    spot_player = dict(zip(spots, first_seats, strict=True))

    def by_activity() -> int:
        return min(bisect.bisect_left(activity, rng.random() * total_activity), n_players - 1)

    created_at: list[datetime | None] = [None] * n_players
    matches: list[_Match] = []
    seat = 0
    with _bar("generate matches", len(sizes), progress, "match") as bar:
        for i, (ended_at, size) in enumerate(zip(times, sizes, strict=False)):
            chosen: list[int] = []
            for _ in range(size):
                p = spot_player.get(seat)
                seat += 1
                while p is None or p in chosen:
                    p = by_activity()
                chosen.append(p)
            received_at = ended_at + timedelta(milliseconds=rng.randint(150, 2500))
            raw = match_results(rng, [ids[p] for p in chosen])
            index = {ids[p]: p for p in chosen}
            results = []
            for r in raw:
                meta = r.get("metadata")
                results.append(
                    (index[r["player"]], r["board"], r["score"], json.dumps(meta) if meta is not None else None)
                )
            m = _Match(f"demo-{i + 1:06d}", ended_at, received_at, results)
            m.body_hash = MatchIn(
                m.match_id,
                ended_at,
                tuple(ResultIn(r["player"], r["board"], r["score"], None, r.get("metadata")) for r in raw),
            ).body_hash()
            matches.append(m)
            for p in chosen:
                if created_at[p] is None:
                    created_at[p] = received_at
            if i % 1000 == 999:
                bar.update(1000)
        bar.update(len(sizes) % 1000)
    return _Data(ids, names, created_at, matches)


# (board_id, window) -> player index -> [value, reached_at, encoded, metadata, updated_at, latest_at]
_Values = dict[tuple[int, str], dict[int, list[Any]]]


def _aggregate(config: GameConfig, data: _Data, progress: bool) -> _Values:
    """Each player's value per board and window, by the ingest path's own rules: the best
    encoded score (first one wins a tie), or the sum with total_reached_at()."""
    tz, seasons = config.game.reset_timezone, config.seasons
    boards = config.boards
    values: _Values = {}
    with _bar("aggregate values", len(data.matches), progress, "match") as bar:
        for n, m in enumerate(data.matches):
            ended_at, received_at = m.ended_at, m.received_at
            # board slug -> the value maps of every window this match counts in
            targets: dict[str, list[dict[int, list[Any]]]] = {}
            for p, slug, score, meta in m.results:
                board = boards[slug]
                maps = targets.get(slug)
                if maps is None:
                    windows = windows_for(ended_at, tz, board.windows, seasons)
                    maps = targets[slug] = [values.setdefault((board.id, w), {}) for w in windows]
                if board.mode == Board.Mode.TOTAL:
                    for per_player in maps:
                        cur = per_player.get(p)
                        if cur is None:
                            per_player[p] = [score, ended_at, None, meta, received_at, ended_at]
                            continue
                        cur[1] = total_reached_at(cur[0], cur[1], score, ended_at)
                        cur[0] += score
                        if ended_at >= cur[5]:
                            cur[3], cur[5] = meta, ended_at
                        if received_at > cur[4]:
                            cur[4] = received_at
                else:
                    encoded = encoding.encode(board, score, ended_at)
                    for per_player in maps:
                        cur = per_player.get(p)
                        if cur is None or encoded > cur[2]:
                            per_player[p] = [score, ended_at, encoded, meta, received_at, ended_at]
            if n % 1000 == 999:
                bar.update(1000)
        bar.update(len(data.matches) % 1000)
    by_id = {b.id: b for b in boards.values()}
    for (board_id, _), per_player in values.items():
        board = by_id[board_id]
        if board.mode == Board.Mode.TOTAL:
            for v in per_player.values():
                v[2] = encoding.encode(board, v[0], v[1])
    return values


def _copy_all(config: GameConfig, data: _Data, values: _Values, progress: bool) -> None:
    game_id = config.game.id
    fallback = min((m.received_at for m in data.matches), default=timezone.now())
    with connection.cursor() as django_cur:
        cur = django_cur.cursor  # the psycopg 3 cursor
        with _bar("copy players", len(data.ids), progress, "player") as bar:
            with cur.copy("COPY scores_player (game_id, external_id, display_name, created_at) FROM STDIN") as cp:
                for ext, name, created in zip(data.ids, data.names, data.created_at, strict=True):
                    cp.write_row((game_id, ext, name, created or fallback))
            bar.update(len(data.ids))
            cur.execute("SELECT external_id, id FROM scores_player WHERE game_id = %s", [game_id])
            pk_of = dict(cur.fetchall())
            player_pk = [pk_of[ext] for ext in data.ids]

        with _bar("copy matches", len(data.matches), progress, "match") as bar:
            columns = "game_id, match_id, ended_at, body_hash, status, server_key_id, received_at"
            with cur.copy(f"COPY scores_match ({columns}) FROM STDIN") as cp:
                for m in data.matches:
                    cp.write_row((game_id, m.match_id, m.ended_at, m.body_hash, "accepted", None, m.received_at))
            bar.update(len(data.matches))
            cur.execute("SELECT match_id, id FROM scores_match WHERE game_id = %s", [game_id])
            match_pk = dict(cur.fetchall())

        n_results = sum(len(m.results) for m in data.matches)
        boards = config.boards
        copy_results = "COPY scores_result (match_id, player_id, board_id, score, metadata, ended_at) FROM STDIN"
        with _bar("copy results", n_results, progress, "result") as bar, cur.copy(copy_results) as cp:
            for m in data.matches:
                mpk = match_pk[m.match_id]
                for p, slug, score, meta in m.results:
                    cp.write_row((mpk, player_pk[p], boards[slug].id, score, meta, m.ended_at))
                bar.update(len(m.results))

        # In the unique index's order: appending beats inserting all over the indexes.
        columns = 'board_id, "window", player_id, value, reached_at, encoded, metadata, updated_at, latest_at'
        copy_values = f"COPY scores_playervalue ({columns}) FROM STDIN"
        with _bar("copy board values", _count(values), progress, "value") as bar, cur.copy(copy_values) as cp:
            for board_id, window in sorted(values):
                per_player = values[board_id, window]
                for p in sorted(per_player):
                    v = per_player[p]
                    cp.write_row((board_id, window, player_pk[p], v[0], v[1], v[2], v[3], v[4], v[5]))
                bar.update(len(per_player))


def _count(values: _Values) -> int:
    return sum(len(per_player) for per_player in values.values())


# --- live traffic ------------------------------------------------------------------------


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


def demo_accounts_heal() -> int:
    """Logins for the demo players when the data was loaded before demo accounts existed."""
    game_id = Game.objects.filter(slug=DEMO_SLUG).values_list("id", flat=True).first()
    if game_id is None or not demo_accounts_missing(game_id=game_id):
        return 0
    return demo_accounts_create(game_id=game_id)


def demo_players(limit: int | None = None) -> list[str]:
    qs = Player.objects.filter(game__slug=DEMO_SLUG).order_by("id").values_list("external_id", flat=True)
    return list(qs[:limit] if limit else qs)
