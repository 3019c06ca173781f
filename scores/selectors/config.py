"""Games and boards as readers see them: the configuration, cached in-process, and the game
descriptions of GET /api/v1/games."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError

from scores import ids, windows
from scores.config import BoardDefinition, SubscoreSpec, origin_normalise
from scores.models import Board, Game, Region, Season
from scores.windows import SeasonSpan


@dataclass(frozen=True)
class RegionConfig:
    id: int
    slug: str
    timezone: str


@dataclass(frozen=True)
class GameConfig:
    game: Game
    boards: dict[str, BoardConfig]
    seasons: tuple[SeasonSpan, ...]
    regions: dict[str, RegionConfig] = field(default_factory=dict)
    season_ids: dict[str, int] = field(default_factory=dict)
    season_names: dict[str, str] = field(default_factory=dict)  # slug -> name, for the pages

    def timezone_of(self, window: str) -> str:
        """The time zone a window rolls over in: its region's, or the game's."""
        region = windows.split_region(window)[0]
        return self.regions[region].timezone if region else self.game.reset_timezone


def game_get(slug: str) -> Game | None:
    return Game.objects.filter(slug=slug).first()


def season_spans(game_id: int) -> tuple[SeasonSpan, ...]:
    rows = Season.objects.filter(game_id=game_id).order_by("starts_at").values_list("slug", "starts_at", "ends_at")
    return tuple(SeasonSpan(slug, starts, ends) for slug, starts, ends in rows)


def game_config(game: Game) -> GameConfig:
    """The game's configuration as ingest sees it (from the per-process cache)."""
    config = cached_game_config(game.slug)
    if config is None or config.game.id != game.id:  # deleted and created again
        config_cache_clear()
        config = cached_game_config(game.slug)
    assert config is not None
    return config


# --- board configuration for readers, cached in-process -----------------------------------


@dataclass(frozen=True)
class BoardConfig(BoardDefinition):
    """What a reader needs to know about a board (immutable, safe to cache): its definition,
    where it stands (ids, the game's time zone and seasons), and its regions."""

    id: int
    game_id: int
    game_slug: str
    reset_timezone: str
    seasons: tuple[SeasonSpan, ...]
    regions: tuple[RegionConfig, ...] = ()  # empty unless the board keeps regional boards
    # anti-cheat threshold overrides (anticheat/rules.py); not part of equality or hashing
    anticheat: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    format: str = "integer"  # how pages show a score (scores/formats.py); the API answers integers
    shards: int = 1  # sorted sets per window (rediskit/keys.py shard keys)
    exact_rank_limit: int = 10_000
    min_total: int | None = None  # total boards whose results may subtract: their floor
    # a tournament board's settings (docs/competitions.md; competitions/ reads them), else None
    tournament: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    rewards: list[dict[str, Any]] = field(default_factory=list, compare=False, hash=False)  # settlement tiers
    league: dict[str, Any] | None = field(default=None, compare=False, hash=False)  # competitions/ reads it
    # ranked after the score, in declared order (docs/encoding.md, "Sub-scores")
    subscores: tuple[SubscoreSpec, ...] = ()

    def region(self, slug: str) -> RegionConfig | None:
        return next((r for r in self.regions if r.slug == slug), None)


_CONFIG_TTL = 5.0  # seconds: how long an edited game config may take to reach every process
_CONFIG_RETRY = 1.0  # seconds between reload attempts while Postgres is unreachable
_config_cache: dict[str, tuple[float, GameConfig | None]] = {}
# Slugs of no game are remembered too (a 404 costs no query for _CONFIG_TTL), but any stranger
# can invent them: past this many entries, the remembered misses are forgotten, never the games.
_ENTRIES_KEPT = 4096
_config_lock = threading.Lock()


def _load_game(slug: str) -> GameConfig | None:
    game = game_get(slug)
    if game is None:
        return None
    season_rows = list(
        Season.objects.filter(game=game).order_by("starts_at").values_list("id", "slug", "starts_at", "ends_at", "name")
    )
    seasons = tuple(SeasonSpan(slug, starts, ends) for _, slug, starts, ends, _ in season_rows)
    regions = {
        r.slug: RegionConfig(r.id, r.slug, r.timezone) for r in Region.objects.filter(game=game).order_by("slug")
    }
    boards = {
        b.slug: BoardConfig(
            id=b.id,
            slug=b.slug,
            name=b.name,
            game_id=game.id,
            game_slug=game.slug,
            reset_timezone=game.reset_timezone,
            order=b.order,
            mode=b.mode,
            windows=tuple(b.windows),
            min_score=b.min_score,
            max_score=b.max_score,
            max_total=b.max_total,
            rank_display=b.rank_display,
            seasons=seasons,
            regions=tuple(regions.values()) if b.regions else (),
            anticheat=dict(b.anticheat or {}),
            format=b.format,
            shards=b.shards,
            exact_rank_limit=b.exact_rank_limit,
            min_total=b.min_total,
            tournament=b.tournament,
            rewards=list(b.rewards or []),
            league=b.league,
            subscores=tuple(SubscoreSpec(**sub) for sub in b.subscores or ()),
        )
        for b in Board.objects.filter(game=game).order_by("id")
    }
    season_ids = {slug: pk for pk, slug, _, _, _ in season_rows}
    season_names = {slug: name for _, slug, _, _, name in season_rows}
    return GameConfig(
        game=game, boards=boards, seasons=seasons, regions=regions, season_ids=season_ids, season_names=season_names
    )


def cached_game_config(slug: str, *, stale_ok: bool = True) -> GameConfig | None:
    """A game with its boards and seasons, re-read from Postgres at most every few seconds.
    With Postgres unreachable, what was read before (stale_ok: for reads that need only Redis),
    or the error at once (a request that needs Postgres anyway should not wait for the pool
    twice before its 503)."""
    if not ids.is_slug(slug):
        return None  # no such game can exist (and a NUL would not even reach Postgres)
    now = time.monotonic()
    hit = _config_cache.get(slug)
    if hit is None or now - hit[0] > _CONFIG_TTL:
        try:
            hit = (now, _load_game(slug))
        except (OperationalError, InterfaceError):
            if hit is None or not stale_ok:
                raise
            # Postgres unreachable: keep serving what we knew (reads from Redis go on), and
            # try again in a second rather than make every request wait for the pool
            hit = (now - _CONFIG_TTL + _CONFIG_RETRY, hit[1])
        with _config_lock:
            _remember(slug, hit)
    return hit[1]


def _remember(slug: str, hit: tuple[float, GameConfig | None]) -> None:
    if hit[1] is None and slug not in _config_cache and len(_config_cache) >= _ENTRIES_KEPT:
        for missing in [k for k, v in _config_cache.items() if v[1] is None]:
            del _config_cache[missing]
    _config_cache[slug] = hit


def cached_game(slug: str, *, stale_ok: bool = True) -> tuple[Game | None, dict[str, BoardConfig]]:
    config = cached_game_config(slug, stale_ok=stale_ok)
    return (config.game, config.boards) if config else (None, {})


_game_slug_of_board: dict[int, str] = {}


def cached_game_config_of_board(board_id: int) -> GameConfig | None:
    """The cached configuration of the game a board belongs to."""
    slug = _game_slug_of_board.get(board_id)
    if slug is None:
        slug = Board.objects.filter(pk=board_id).values_list("game__slug", flat=True).first()
        if slug is None:
            return None
        _game_slug_of_board[board_id] = slug  # a board never changes games
    config = cached_game_config(slug)
    if config is not None and board_id > max((b.id for b in config.boards.values()), default=0):
        # A board created after the cache was read (ids only grow): a game's new board, or a
        # game deleted and made again under its slug. Without it the cache would answer the
        # board's shards and expiry as "no such board" for up to _CONFIG_TTL (its first
        # results mirrored to the unsharded layout). A board deleted since is not re-read for.
        with _config_lock:
            _config_cache.pop(slug, None)
        config = cached_game_config(slug)
    return config


def window_expiry(board_id: int, *, window: str) -> int | None:
    """Unix time at which a board window's sorted set may expire (None: never)."""
    config = cached_game_config_of_board(board_id)
    if config is None:
        return None
    game = config.game
    region, base = windows.split_region(window)
    if region and region not in config.regions:
        return None
    retention = game.retention_periods
    if windows.kind_of(base) == "daily":
        # rolling windows are unions of daily sets: keep as many days as the longest needs
        board = next((b for b in config.boards.values() if b.id == board_id), None)
        kept = [windows.ROLLING_WINDOWS[w] for w in (board.windows if board else ()) if w in windows.ROLLING_WINDOWS]
        retention = max([retention, *kept])
    moment = windows.expires_at(
        window, config.timezone_of(window), config.seasons, retention, timedelta(seconds=game.close_grace_seconds)
    )
    return int(moment.timestamp()) if moment else None


def cached_board(game_slug: str, *, board_slug: str) -> BoardConfig | None:
    return cached_game(game_slug)[1].get(board_slug)


def config_cache_clear(**kwargs: Any) -> None:
    with _config_lock:
        _config_cache.clear()


def origin_allowed(game_slug: str, *, origin: str) -> bool:
    """Whether a browser page on `origin` may read this game's API with a player token and open
    its websocket: an origin of the game's `allowed_origins` or of the operator-wide
    CORS_ALLOWED_ORIGINS (docs/clients.md). With Postgres unreachable and nothing cached, only
    the operator-wide ones."""
    normalised = origin_normalise(origin)
    if normalised is None or normalised != origin:  # browsers send the normal form: nothing else matches
        return False
    if origin in _operator_origins():
        return True
    try:
        config = cached_game_config(game_slug)
    except (OperationalError, InterfaceError):
        return False
    return config is not None and origin in config.game.allowed_origins


def _operator_origins() -> frozenset[str]:
    return frozenset(filter(None, (origin_normalise(o) for o in settings.CORS_ALLOWED_ORIGINS)))


# --- game description (GET /api/v1/games, /api/v1/games/{game}) ----------------------------


@dataclass(frozen=True)
class GameDescription:
    game: Game
    boards: list[Board]
    seasons: list[Season]
    regions: list[Region]


def games_list() -> list[Game]:
    return list(Game.objects.order_by("slug"))


def game_describe(*, slug: str) -> GameDescription | None:
    """A game with its boards (in configuration order), seasons (by start) and regions."""
    game = Game.objects.filter(slug=slug).first()
    if game is None:
        return None
    return GameDescription(
        game=game,
        boards=list(Board.objects.filter(game=game).order_by("id")),
        seasons=list(Season.objects.filter(game=game).order_by("starts_at", "slug")),
        regions=list(Region.objects.filter(game=game).order_by("slug")),
    )
