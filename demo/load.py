"""The demo game `make run` loads: players, ~45 days of matches and every player's value per
board and window, bulk-loaded with Postgres COPY (scores/bulk.py), then the demo boards'
sorted sets rebuilt.

Values are derived in Python with the very functions the ingest path uses (windows_for,
encoding.encode, total_reached_at); the ingest service is never called per match: 30k
matches load in seconds (most of them spent by Postgres on index upkeep).
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from boards.selectors import board_size
from demo.friends import demo_friends_create
from demo.names import DEMO_CONFIG, DEMO_SLUG, display_name, match_results, player_external_id
from scores import bulk, encoding
from scores.accounts import demo_accounts_create, demo_accounts_missing
from scores.config import parse_game_config
from scores.ingest import MatchIn, ResultIn
from scores.models import Board, Game, Player, PlayerValue, Season
from scores.projection.values import total_reached_at
from scores.selectors import GameConfig, game_config
from scores.services import game_config_apply
from scores.windows import windows_for

HISTORY_DAYS = 45
# The demo's seasons are made relative to the day it is loaded, not written in games/demo.toml:
# a fixed date would leave the demo without a current season once the calendar passed it
# (docs/game-config.md, "The demo game's seasons").
SEASON_DAYS = 91
SEASON_LEAD_DAYS = 30  # the first season started this long before the load: the history straddles it
LOCK_ID = 0x6C62_6465_6D6F  # pg advisory lock: one demo_load at a time


@dataclass
class LoadReport:
    loaded: bool = False  # False: the demo was there already, nothing was written
    players: int = 0
    matches: int = 0
    results: int = 0
    values: int = 0  # board window values (scores_playervalue rows)
    redis_entries: int = 0  # sorted-set members, after the rebuild
    accounts: int = 0  # demo sign-ins
    friendships: int = 0  # rows (each friendship is two)
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


class DemoRefused(Exception):
    """The demo may not be loaded here (docs/operations.md, "Production settings")."""


DEMO_REFUSED_UNDER_HTTPS = (
    "DEPLOY_HTTPS=1: refusing to load the demo game, whose 100,000 players all sign in with the "
    "password 'demo'; a deployment runs without it (DEMO=0 for make run)"
)


def demo_allowed_check() -> None:
    """Raise DemoRefused on a deployment: DEPLOY_HTTPS=1 marks a public service, where the demo's
    well-known logins would be anyone's accounts."""
    if getattr(settings, "DEPLOY_HTTPS", False):
        raise DemoRefused(DEMO_REFUSED_UNDER_HTTPS)


def demo_loaded() -> bool:
    return Player.objects.filter(game__slug=DEMO_SLUG).exists()


def demo_boards_missing_in_redis() -> list[Board]:
    """Demo boards whose all-time sorted set is absent although Postgres has values."""
    return [
        b
        for b in Board.objects.filter(game__slug=DEMO_SLUG)
        if not board_size(b.id, window="all") and PlayerValue.objects.filter(board=b, window="all").exists()
    ]


def _bar(desc: str, total: int | None, enabled: bool, unit: str = "row"):
    """A progress bar on stderr, drawn only on a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=None if enabled else True, leave=True)


def demo_load(
    *, players: int = 100_000, matches: int = 30_000, seed: int = 1, now: datetime | None = None, progress: bool = True
) -> LoadReport:
    """Load the demo game once. Returns a report with loaded=False if it already had players.
    Raises DemoRefused under DEPLOY_HTTPS=1, before writing anything."""
    from boards.services import boards_rebuild

    demo_allowed_check()

    report = LoadReport()
    started = time.monotonic()
    phases = _Phases(report)
    now = (now or timezone.now()).replace(microsecond=0)
    with transaction.atomic():
        bulk.bulk_lock(LOCK_ID)
        if demo_loaded():
            return report
        report.fk_checks_skipped = bulk.fk_checks_skip()
        game_config_apply(parse_game_config(DEMO_CONFIG.read_text(encoding="utf-8")))
        demo_seasons_current(now=now)
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
    bulk.tables_analyze()
    phases.done("analyze")
    with _bar("redis boards", report.values, progress, "value") as bar:
        rebuilt = boards_rebuild(boards=list(config.boards.values()), progress=bar.update)
    report.redis_entries = rebuilt.entries
    phases.done("redis")
    report.friendships = demo_friends_create(config=config, seed=seed)
    phases.done("friends")
    report.loaded = True
    report.seconds = time.monotonic() - started
    return report


def demo_seasons_current(*, now: datetime | None = None) -> list[str]:
    """Make sure the demo game has a season running at `now`; returns the seasons created.

    The first is `s1` ("Season 1"), from midnight UTC SEASON_LEAD_DAYS before `now`, for
    SEASON_DAYS days. When the last one has ended (a `make run` started long after the
    load), the next follows it on the same SEASON_DAYS grid: the one that holds `now`, numbered
    on. Runs on every `make run` start (demo_load); a game file's own seasons are left alone."""
    now = now or timezone.now()
    game = Game.objects.filter(slug=DEMO_SLUG).first()
    if game is None:
        return []
    seasons = list(Season.objects.filter(game=game).order_by("ends_at"))
    if any(s.starts_at <= now < s.ends_at for s in seasons):
        return []
    period = timedelta(days=SEASON_DAYS)
    if seasons and seasons[-1].ends_at <= now:
        last_end = seasons[-1].ends_at
        start = last_end + period * ((now - last_end) // period)
    else:
        midnight = datetime(now.year, now.month, now.day, tzinfo=UTC)
        start = midnight - timedelta(days=SEASON_LEAD_DAYS)
    taken = {s.slug for s in seasons}
    number = len(seasons) + 1
    while f"s{number}" in taken:
        number += 1
    Season.objects.create(
        game=game, slug=f"s{number}", name=f"Season {number}", starts_at=start, ends_at=start + period
    )
    return [f"s{number}"]


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
            m = _match_of(f"demo-{i + 1:06d}", ended_at, received_at, raw, {ids[p]: p for p in chosen})
            matches.append(m)
            for p in chosen:
                if created_at[p] is None:
                    created_at[p] = received_at
            if i % 1000 == 999:
                bar.update(1000)
        bar.update(len(sizes) % 1000)
    if n_players >= 2:
        matches += _login_matches(rng, config, ids, now)
        matches.sort(key=lambda m: (m.ended_at, m.match_id))
    return _Data(ids, names, created_at, matches)


LOGIN_MATCHES_PER_BOARD = 2


def _login_matches(rng: random.Random, config: GameConfig, ids: list[str], now: datetime) -> list[_Match]:
    """A few matches of the demo login (ids[0]) on every board within the last hours, today in
    the game's time zone where the day allows: its page shows a score in every window."""
    zone = ZoneInfo(config.game.reset_timezone)
    local = now.astimezone(zone)
    midnight = datetime(local.year, local.month, local.day, tzinfo=zone).astimezone(UTC)
    latest = now - timedelta(seconds=90)
    earliest = max(midnight + timedelta(seconds=60), now - timedelta(hours=3))
    if earliest >= latest:  # just after midnight: yesterday's evening it is
        earliest = latest - timedelta(hours=1)
    span = (latest - earliest).total_seconds()
    out = []
    others = list(range(1, len(ids)))
    for slug in config.boards:
        for k in range(LOGIN_MATCHES_PER_BOARD):
            chosen = [0, *rng.sample(others, min(len(others), rng.randint(1, 5)))]
            raw: list[dict[str, Any]] = []
            while not any(r["player"] == ids[0] for r in raw):  # a race's finishers must include the login
                raw = match_results(rng, [ids[p] for p in chosen], board=slug)
            ended_at = (earliest + timedelta(seconds=rng.uniform(0, span))).replace(microsecond=0)
            received_at = ended_at + timedelta(milliseconds=rng.randint(150, 2500))
            out.append(_match_of(f"demo-login-{slug}-{k + 1}", ended_at, received_at, raw, {ids[p]: p for p in chosen}))
    return out


def _match_of(
    match_id: str, ended_at: datetime, received_at: datetime, raw: list[dict[str, Any]], index: dict[str, int]
) -> _Match:
    """A match to load from the result bodies `raw` (index: player id -> player index), with the
    body hash a submission of that body would have."""
    results = []
    for r in raw:
        meta = r.get("metadata")
        results.append((index[r["player"]], r["board"], r["score"], json.dumps(meta) if meta is not None else None))
    m = _Match(match_id, ended_at, received_at, results)
    m.body_hash = MatchIn(
        match_id, ended_at, tuple(ResultIn(r["player"], r["board"], r["score"], None, r.get("metadata")) for r in raw)
    ).body_hash()
    return m


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
    with _bar("copy players", len(data.ids), progress, "player") as bar:
        rows = (
            (ext, name, created or fallback)
            for ext, name, created in zip(data.ids, data.names, data.created_at, strict=True)
        )
        pk_of = bulk.players_copy(game_id=game_id, rows=rows)
        player_pk = [pk_of[ext] for ext in data.ids]
        bar.update(len(data.ids))

    with _bar("copy matches", len(data.matches), progress, "match") as bar:
        rows = ((m.match_id, m.ended_at, m.body_hash, "accepted", m.received_at) for m in data.matches)
        match_pk = bulk.matches_copy(game_id=game_id, rows=rows)
        bar.update(len(data.matches))

    boards = config.boards
    n_results = sum(len(m.results) for m in data.matches)

    def results() -> Iterator[tuple[int, int, int, int, str | None, datetime]]:
        for m in data.matches:
            mpk = match_pk[m.match_id]
            for p, slug, score, meta in m.results:
                yield (mpk, player_pk[p], boards[slug].id, score, meta, m.ended_at)
            bar.update(len(m.results))

    with _bar("copy results", n_results, progress, "result") as bar:
        bulk.results_copy(rows=results())

    def value_rows() -> Iterator[tuple[Any, ...]]:
        for board_id, window in sorted(values):  # in the unique index's order
            per_player = values[board_id, window]
            for p in sorted(per_player):
                v = per_player[p]
                yield (board_id, window, player_pk[p], v[0], v[1], v[2], v[3], v[4], v[5])
            bar.update(len(per_player))

    with _bar("copy board values", _count(values), progress, "value") as bar:
        bulk.values_copy(rows=value_rows())


def _count(values: _Values) -> int:
    return sum(len(per_player) for per_player in values.values())


def demo_accounts_heal() -> int:
    """Logins for the demo players when the data was loaded before demo accounts existed.
    Raises DemoRefused under DEPLOY_HTTPS=1."""
    demo_allowed_check()
    game_id = Game.objects.filter(slug=DEMO_SLUG).values_list("id", flat=True).first()
    if game_id is None or not demo_accounts_missing(game_id=game_id):
        return 0
    return demo_accounts_create(game_id=game_id)


def demo_players(limit: int | None = None) -> list[str]:
    qs = Player.objects.filter(game__slug=DEMO_SLUG).order_by("id").values_list("external_id", flat=True)
    return list(qs[:limit] if limit else qs)
