"""Reads of the durable store that other modules need."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import InterfaceError, OperationalError, connection

from scores import encoding, ids, windows
from scores.models import Board, Friendship, Game, Player, PlayerAccount, Region, Season
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
class BoardConfig:
    """What a reader needs to know about a board (immutable, safe to cache)."""

    id: int
    slug: str
    name: str
    game_id: int
    game_slug: str
    reset_timezone: str
    order: str
    mode: str
    windows: tuple[str, ...]
    min_score: int
    max_score: int
    max_total: int | None
    rank_display: str
    seasons: tuple[SeasonSpan, ...]
    regions: tuple[RegionConfig, ...] = ()  # empty unless the board keeps regional boards
    # anti-cheat threshold overrides (anticheat/rules.py); not part of equality or hashing
    anticheat: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    format: str = "integer"  # how pages show a score (scores/formats.py); the API answers integers
    shards: int = 1  # sorted sets per window (boards/keys.py shard keys)
    exact_rank_limit: int = 10_000

    def region(self, slug: str) -> RegionConfig | None:
        return next((r for r in self.regions if r.slug == slug), None)


_CONFIG_TTL = 5.0  # seconds: how long an edited game config may take to reach every process
_CONFIG_RETRY = 1.0  # seconds between reload attempts while Postgres is unreachable
_config_cache: dict[str, tuple[float, GameConfig | None]] = {}
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
            _config_cache[slug] = hit
    return hit[1]


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
    return cached_game_config(slug)


def window_expiry(board_id: int, window: str) -> int | None:
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


def cached_board(game_slug: str, board_slug: str) -> BoardConfig | None:
    return cached_game(game_slug)[1].get(board_slug)


def config_cache_clear(**kwargs: Any) -> None:
    with _config_lock:
        _config_cache.clear()


# --- players --------------------------------------------------------------------------------


def player_pk(game_id: int, external_id: str) -> int | None:
    return Player.objects.filter(game_id=game_id, external_id=external_id).values_list("pk", flat=True).first()


def player_of_user(user_id: int | None, game_id: int) -> int | None:
    """The player a signed-in user plays as in a game (scores.PlayerAccount), or None."""
    if not user_id:
        return None
    return PlayerAccount.objects.filter(user_id=user_id, game_id=game_id).values_list("player_id", flat=True).first()


def friend_pks(player_pk_: int) -> list[int]:
    return list(Friendship.objects.filter(player_id=player_pk_).values_list("friend_id", flat=True))


@dataclass(frozen=True)
class Profile:
    external_id: str
    display_name: str
    metadata: dict[str, Any] | None
    encoded: int | None  # the value Postgres holds for this board window, if any


def profiles(board_id: int, window: str, pks: list[int]) -> dict[int, Profile]:
    """Players with their value's metadata on one board window, in one query."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT p.id, p.external_id, p.display_name, pv.metadata, pv.encoded
            FROM scores_player p
            LEFT JOIN scores_playervalue pv ON pv.player_id = p.id AND pv.board_id = %s AND pv."window" = %s
            WHERE p.id = ANY(%s)
            """,
            [board_id, window, pks],
        )
        return {pk: Profile(ext, name, _json(meta), enc) for pk, ext, name, meta, enc in cur.fetchall()}


def _json(value: Any) -> Any:
    # Django has psycopg hand jsonb to raw cursors as text (its JSONField decodes it).
    return json.loads(value) if isinstance(value, str) else value


# --- the durable order, for readers when Redis is unreachable ------------------------------

_ORDER = 'pv.encoded DESC, p.external_id COLLATE "C"'


@dataclass(frozen=True)
class DurableSlice:
    total: int
    start: int  # 0-based position of rows[0]
    rows: list[tuple[int, int]]  # (player pk, encoded) in contract order
    better: dict[int, int]  # value part -> players with a strictly better value
    profiles: dict[int, Profile]


def _slice(board: BoardConfig, window: str, start: int, count: int) -> DurableSlice:
    with connection.cursor() as cur:
        cur.execute('SELECT count(*) FROM scores_playervalue WHERE board_id = %s AND "window" = %s', [board.id, window])
        total = cur.fetchone()[0]
        cur.execute(
            f"""
            SELECT pv.player_id, pv.encoded, p.external_id, p.display_name, pv.metadata
            FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
            WHERE pv.board_id = %s AND pv."window" = %s ORDER BY {_ORDER} OFFSET %s LIMIT %s
            """,
            [board.id, window, start, count],
        )
        fetched = cur.fetchall()
        parts = sorted({e >> encoding.TIME_BITS for _, e, *_ in fetched})
        better = {}
        for part in parts:
            cur.execute(
                'SELECT count(*) FROM scores_playervalue WHERE board_id = %s AND "window" = %s AND encoded >= %s',
                [board.id, window, (part + 1) << encoding.TIME_BITS],
            )
            better[part] = cur.fetchone()[0]
    return DurableSlice(
        total=total,
        start=start,
        rows=[(pk, e) for pk, e, *_ in fetched],
        better=better,
        profiles={pk: Profile(ext, name, _json(meta), e) for pk, e, ext, name, meta in fetched},
    )


def durable_range(board: BoardConfig, window: str, start: int, stop: int) -> DurableSlice:
    return _slice(board, window, start, stop - start + 1)


def durable_position(board: BoardConfig, window: str, pk: int) -> int | None:
    """0-based position of a player in the contract order, or None if unranked."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT count(*) FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id,
                (SELECT pv2.encoded, p2.external_id FROM scores_playervalue pv2 JOIN scores_player p2 ON p2.id = pv2.player_id
                 WHERE pv2.board_id = %s AND pv2."window" = %s AND pv2.player_id = %s) me
            WHERE pv.board_id = %s AND pv."window" = %s
              AND (pv.encoded > me.encoded OR (pv.encoded = me.encoded AND p.external_id COLLATE "C" < me.external_id COLLATE "C"))
            """,
            [board.id, window, pk, board.id, window],
        )
        ahead = cur.fetchone()[0]
        cur.execute(
            'SELECT 1 FROM scores_playervalue WHERE board_id = %s AND "window" = %s AND player_id = %s',
            [board.id, window, pk],
        )
        return ahead if cur.fetchone() else None


def durable_standings(
    board: BoardConfig, window: str, pks: list[int]
) -> tuple[dict[int, tuple[int, int, int]], dict[int, Profile]]:
    """{pk: (encoded, 0-based position, players with a strictly better value)} for the
    players among pks who have a value in the window, with their profiles."""
    with connection.cursor() as cur:
        cur.execute(
            f"""
            WITH me AS (
                SELECT pv.player_id, pv.encoded, pv.metadata, p.external_id, p.display_name
                FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
                WHERE pv.board_id = %(b)s AND pv."window" = %(w)s AND pv.player_id = ANY(%(pks)s)
            )
            SELECT me.player_id, me.encoded, me.external_id, me.display_name, me.metadata,
                (SELECT count(*) FROM scores_playervalue x
                 WHERE x.board_id = %(b)s AND x."window" = %(w)s AND x.encoded > me.encoded)
                + (SELECT count(*) FROM scores_playervalue x JOIN scores_player px ON px.id = x.player_id
                   WHERE x.board_id = %(b)s AND x."window" = %(w)s AND x.encoded = me.encoded
                     AND px.external_id COLLATE "C" < me.external_id COLLATE "C"),
                (SELECT count(*) FROM scores_playervalue x
                 WHERE x.board_id = %(b)s AND x."window" = %(w)s AND x.encoded >= ((me.encoded >> {encoding.TIME_BITS}) + 1) << {encoding.TIME_BITS})
            FROM me
            """,
            {"b": board.id, "w": window, "pks": pks},
        )
        rows = cur.fetchall()
    standings = {pk: (enc, pos, better) for pk, enc, _, _, _, pos, better in rows}
    found = {pk: Profile(ext, name, _json(meta), enc) for pk, enc, ext, name, meta, _, _ in rows}
    return standings, found


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


def window_rows(board: BoardConfig, window: str, *, chunk: int = 5000) -> Iterator[tuple]:
    """Every value of a board window in the contract's order, streamed from a server-side cursor:
    (position, rank as displayed, player id, display name, value, reached_at)."""
    rank = (
        f"RANK() OVER (ORDER BY pv.encoded >> {encoding.TIME_BITS} DESC)"
        if board.rank_display == "shared"
        else "ROW_NUMBER() OVER w"
    )
    with connection.chunked_cursor() as cur:
        cur.execute(
            f"""
            SELECT ROW_NUMBER() OVER w, {rank}, p.external_id, p.display_name, pv.value, pv.reached_at
            FROM scores_playervalue pv JOIN scores_player p ON p.id = pv.player_id
            WHERE pv.board_id = %s AND pv."window" = %s
            WINDOW w AS (ORDER BY {_ORDER})
            ORDER BY {_ORDER}
            """,
            [board.id, window],
        )
        while rows := cur.fetchmany(chunk):
            yield from rows
