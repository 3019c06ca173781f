"""Configuration as code (docs/api.md §2): parse and check a game's TOML file.

Every problem is reported with the key it concerns ("boards[1].max_score: ..."), and a file
with any problem is refused whole."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from scores import encoding, formats
from scores.ids import is_slug, is_subscore_name
from scores.windows import ROLLING_WINDOWS, WINDOW_KINDS


class ConfigError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class BoardDefinition:
    """What a board's TOML table says and its stored row keeps: the fields the parsed spec
    (BoardSpec) and the readers' cached board (scores.selectors.BoardConfig) share."""

    slug: str
    name: str
    order: str
    mode: str
    windows: tuple[str, ...]
    min_score: int
    max_score: int
    max_total: int | None
    rank_display: str


@dataclass(frozen=True)
class SubscoreSpec:
    """One declared sub-score (docs/api.md §2.3): ranked after the score, in its own order."""

    name: str
    order: str  # desc | asc
    min: int
    max: int


@dataclass(frozen=True)
class BoardSpec(BoardDefinition):
    regions: bool = False
    anticheat: tuple[tuple[str, int | float], ...] = ()  # threshold overrides, sorted by key
    format: str = "integer"  # how pages show a score (scores/formats.py)
    shards: int = 1  # sorted sets per board window (docs/game-config.md)
    exact_rank_limit: int = 10_000  # ranks deeper than this on a sharded board may be estimated
    min_total: int | None = None  # total boards whose results may subtract: the floor (None: 0)
    # a tournament's settings (docs/competitions.md), parsed by the app that registered the table
    tournament: tuple[tuple[str, Any], ...] | None = None
    # settlement rewards by frozen rank (docs/competitions.md), parsed like the tournament table
    rewards: tuple[tuple[str, Any], ...] = ()
    # a league's tiers and groups over the season window (docs/competitions.md), like the above
    league: tuple[tuple[str, Any], ...] | None = None
    # ranked after the score, in declared order (docs/encoding.md, "Sub-scores")
    subscores: tuple[SubscoreSpec, ...] = ()


@dataclass(frozen=True)
class RegionSpec:
    slug: str
    timezone: str  # an IANA name: the region's days and weeks start at its own midnight


@dataclass(frozen=True)
class SeasonSpec:
    slug: str
    name: str
    starts_at: datetime
    ends_at: datetime


@dataclass(frozen=True)
class GameSpec:
    slug: str
    name: str
    reset_timezone: str
    close_grace_seconds: int
    retention_periods: int
    boards: tuple[BoardSpec, ...]
    seasons: tuple[SeasonSpec, ...]
    regions: tuple[RegionSpec, ...] = ()
    allowed_origins: tuple[str, ...] = ()  # browser game clients' origins (docs/clients.md)
    # settlement webhooks (docs/competitions.md), parsed by the app that registered the table
    webhooks: tuple[tuple[str, Any], ...] = ()


MAX_SHARDS = 1024  # sorted sets per board window: far more than a cluster has masters
MAX_EXACT_RANK_LIMIT = 10_000_000

_GAME_KEYS = {"slug", "name", "reset_timezone", "close_grace_seconds", "retention_periods", "allowed_origins"}
_BOARD_KEYS = {
    "slug", "name", "order", "mode", "windows", "min_score", "max_score", "max_total", "rank_display", "regions",
    "anticheat", "format", "shards", "exact_rank_limit", "min_total", "tournament",
    "rewards", "league", "subscores",
}  # fmt: skip
_SUBSCORE_KEYS = {"name", "order", "min", "max"}
_REGION_KEYS = {"slug", "timezone"}
_SEASON_KEYS = {"slug", "name", "starts_at", "ends_at"}


def parse_game_config(text: str) -> GameSpec:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("(file)", f"not valid TOML: {exc}") from None
    _no_unknown(doc, {"game", "boards", "seasons", "regions", "webhooks"}, "")
    game = doc.get("game")
    if not isinstance(game, dict):
        raise ConfigError("game", "a [game] table is required")
    _no_unknown(game, _GAME_KEYS, "game.")
    tz = _str(game, "reset_timezone", "game.", default="UTC")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError("game.reset_timezone", f"{tz!r} is not an IANA time zone name") from None
    boards = tuple(_board(b, i) for i, b in enumerate(_tables(doc, "boards")))
    seasons = tuple(_season(s, i) for i, s in enumerate(_tables(doc, "seasons")))
    _unique([b.slug for b in boards], "boards", "slug")
    _unique([s.slug for s in seasons], "seasons", "slug")
    regions = tuple(_region(r, i) for i, r in enumerate(_tables(doc, "regions")))
    _unique([r.slug for r in regions], "regions", "slug")
    for i, b in enumerate(boards):
        if b.regions and not regions:
            raise ConfigError(f"boards[{i}].regions", "a regional board needs [[regions]] in the file")
    return GameSpec(
        slug=_slug(game, "game."),
        name=_str(game, "name", "game."),
        reset_timezone=tz,
        close_grace_seconds=_int(game, "close_grace_seconds", "game.", default=300, low=0),
        retention_periods=_int(game, "retention_periods", "game.", default=1, low=0),
        boards=boards,
        seasons=seasons,
        regions=regions,
        allowed_origins=_origins(game, "game."),
        webhooks=_registered_table(doc, "webhooks", ""),
    )


MAX_ALLOWED_ORIGINS = 100


def origin_normalise(value: str) -> str | None:
    """`scheme://host[:port]` in the form browsers send it in the Origin header (lower case,
    no default port), or None when the value is not such an origin (a path, a wildcard...)."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host or "*" in value or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or value.endswith("?") or value.endswith("#"):
        return None
    if port is not None and port == {"http": 80, "https": 443}[parts.scheme]:
        port = None
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def _origins(raw: dict[str, Any], p: str) -> tuple[str, ...]:
    value = raw.get("allowed_origins", [])
    key = p + "allowed_origins"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(key, 'a list of origins is required, like ["https://play.example.com"]')
    if len(value) > MAX_ALLOWED_ORIGINS:
        raise ConfigError(key, f"at most {MAX_ALLOWED_ORIGINS} origins")
    origins: list[str] = []
    for v in value:
        origin = origin_normalise(v)
        if origin is None:
            raise ConfigError(
                key, f"{v!r} is not an origin: scheme (http or https), host and optional port, no path or wildcard"
            )
        if origin in origins:
            raise ConfigError(key, f"{v!r} appears twice")
        origins.append(origin)
    return tuple(origins)


def _board(raw: dict[str, Any], i: int) -> BoardSpec:
    p = f"boards[{i}]."
    _no_unknown(raw, _BOARD_KEYS, p)
    order = _choice(raw, "order", p, ("desc", "asc"), "desc")
    mode = _choice(raw, "mode", p, ("best", "total", "latest"), "best")
    windows = raw.get("windows", ["all"])
    if not isinstance(windows, list) or not windows or any(w not in WINDOW_KINDS for w in windows):
        raise ConfigError(p + "windows", f"a non-empty list drawn from {', '.join(WINDOW_KINDS)}")
    if len(set(windows)) != len(windows):
        raise ConfigError(p + "windows", "lists a window twice")
    if any(w in ROLLING_WINDOWS for w in windows) and "daily" not in windows:
        raise ConfigError(
            p + "windows", 'rolling windows (last7d, last30d) are built from daily windows: keep "daily" too'
        )
    min_score = _int(raw, "min_score", p, default=0)
    max_score = _int(raw, "max_score", p)
    if max_score < min_score:
        raise ConfigError(p + "max_score", f"{max_score} is below min_score {min_score}")
    max_total = raw.get("max_total")
    if max_total is not None:
        if mode != "total":
            raise ConfigError(
                p + "max_total",
                f"only total boards have a max_total (a {mode} board's value is one result, within min_score and "
                "max_score)",
            )
        max_total = _int(raw, "max_total", p)
        if max_total < max_score:
            raise ConfigError(p + "max_total", f"{max_total} is below max_score {max_score}")
    min_total = raw.get("min_total")
    if min_total is not None:
        if mode != "total" or min_score >= 0:
            raise ConfigError(
                p + "min_total", "only total boards whose results may subtract (min_score < 0) have a min_total"
            )
        min_total = _int(raw, "min_total", p, high=0)
    if mode == "total" and min_score < 0 and any(w in ROLLING_WINDOWS for w in windows):
        raise ConfigError(
            p + "windows",
            "total boards whose results may subtract keep no rolling windows (last7d, last30d): a clamped total "
            "is not the sum of its days",
        )
    if mode == "latest" and any(w in ROLLING_WINDOWS for w in windows):
        raise ConfigError(
            p + "windows", "latest boards keep no rolling windows (last7d, last30d): a union of days has no latest"
        )
    if mode == "total" and order == "asc":
        raise ConfigError(p + "order", 'total boards rank larger totals first; use order = "desc"')
    spec = BoardSpec(
        slug=_slug(raw, p),
        name=_str(raw, "name", p),
        order=order,
        mode=mode,
        windows=tuple(windows),
        min_score=min_score,
        max_score=max_score,
        max_total=max_total,
        rank_display=_choice(raw, "rank_display", p, ("unique", "shared"), "unique"),
        regions=_bool(raw, "regions", p, default=False),
        anticheat=_anticheat(raw, p),
        format=_format(raw, p),
        shards=_int(raw, "shards", p, default=1, low=1, high=MAX_SHARDS),
        exact_rank_limit=_int(raw, "exact_rank_limit", p, default=10_000, low=1, high=MAX_EXACT_RANK_LIMIT),
        min_total=min_total,
        tournament=_tournament(raw, p, windows),
        rewards=_registered_table(raw, "rewards", p),
        league=_league(raw, p, windows),
        subscores=_subscores(raw, p, mode),
    )
    problem = encoding.budget_problem(spec)
    if problem:
        key = "max_total" if mode == "total" else "max_score"
        if spec.subscores:
            # the first sub-score whose range takes the product past the budget
            span = encoding.score_span(spec)
            for j, sub in enumerate(spec.subscores):
                span *= encoding.subscore_span(sub)
                if span > encoding.VALUE_SPAN_LIMIT:
                    key = f"subscores[{j}].max"
                    break
        raise ConfigError(p + key, problem)
    return spec


def _subscores(raw: dict[str, Any], p: str, mode: str) -> tuple[SubscoreSpec, ...]:
    tables = raw.get("subscores")
    if tables is None:
        return ()
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(p + "subscores", 'a list of tables: subscores = [{name = "kills", max = 1000}]')
    if mode == "total":
        raise ConfigError(p + "subscores", "only best and latest boards have sub-scores (a total has no one result)")
    if len(tables) > encoding.MAX_SUBSCORES:
        raise ConfigError(
            p + "subscores", f"at most {encoding.MAX_SUBSCORES} sub-scores per board, {len(tables)} given"
        )
    out = []
    for j, t in enumerate(tables):
        q = f"{p}subscores[{j}]."
        _no_unknown(t, _SUBSCORE_KEYS, q)
        name = _str(t, "name", q)
        if not is_subscore_name(name):
            raise ConfigError(
                q + "name",
                f"{name!r} is not a sub-score name (1-64 lowercase letters, digits, - and _, "
                "the first a letter or digit)",
            )
        low = _int(t, "min", q, default=0)
        high = _int(t, "max", q)
        if high < low:
            raise ConfigError(q + "max", f"{high} is below min {low}")
        out.append(SubscoreSpec(name=name, order=_choice(t, "order", q, ("desc", "asc"), "desc"), min=low, max=high))
    _unique([s.name for s in out], p + "subscores", "name")
    return tuple(out)


# Parsers of a board's sub-tables that belong to an app above this one (the anti-cheat
# thresholds, a tournament's settings): registered from that app's AppConfig.ready(), so the
# durable core imports none. A parser returns the table's settings (JSON values) or raises
# ValueError((key, message)).
_table_parsers: dict[str, Callable[[Any], dict[str, Any]]] = {}

# the windows a tournament board may keep (docs/api.md §12.1): the whole tournament, and its
# recurring periods
TOURNAMENT_WINDOWS = ("all", "daily", "weekly")


def board_table_register(name: str, parser: Callable[[Any], dict[str, Any]]) -> None:
    _table_parsers[name] = parser


def _tournament(raw: dict[str, Any], p: str, windows: list[str]) -> tuple[tuple[str, Any], ...] | None:
    if "tournament" not in raw:
        return None
    parser = _table_parsers.get("tournament")
    if parser is None:
        raise ConfigError(p + "tournament", "no installed app runs tournaments")
    if "all" not in windows or any(w not in TOURNAMENT_WINDOWS for w in windows):
        raise ConfigError(p + "windows", 'a tournament keeps "all" and optionally "daily" or "weekly"')
    try:
        return tuple(sorted(parser(raw["tournament"]).items()))
    except ValueError as exc:
        key, message = exc.args
        raise ConfigError(p + "tournament" + (f".{key}" if key else ""), message) from None


def _league(raw: dict[str, Any], p: str, windows: list[str]) -> tuple[tuple[str, Any], ...] | None:
    if "league" not in raw:
        return None
    if "season" not in windows:
        raise ConfigError(p + "windows", 'a league plays over the season window: keep "season"')
    if "tournament" in raw:
        raise ConfigError(p + "league", "a board is a tournament or a league, not both")
    return _registered_table(raw, "league", p)


def _registered_table(raw: dict[str, Any], name: str, p: str) -> tuple[tuple[str, Any], ...]:
    """A key whose value an app above this one parses (its registered parser), as sorted items."""
    if name not in raw:
        return ()
    parser = _table_parsers.get(name)
    if parser is None:
        raise ConfigError(p + name, f"no installed app reads {name}")
    try:
        return tuple(sorted(parser(raw[name]).items()))
    except ValueError as exc:
        key, message = exc.args
        raise ConfigError(p + name + (f".{key}" if key and not key.startswith("[") else key), message) from None


def _anticheat(raw: dict[str, Any], p: str) -> tuple[tuple[str, int | float], ...]:
    table = raw.get("anticheat", {})
    parser = _table_parsers.get("anticheat")
    if parser is None:
        if table:
            raise ConfigError(p + "anticheat", "no installed app reads anti-cheat thresholds")
        return ()
    try:
        return tuple(sorted(parser(table).items()))
    except ValueError as exc:
        key, message = exc.args
        raise ConfigError(p + "anticheat" + (f".{key}" if key else ""), message) from None


def _format(raw: dict[str, Any], p: str) -> str:
    value = raw.get("format", "integer")
    if not isinstance(value, str) or not formats.is_valid(value):
        raise ConfigError(p + "format", formats.EXPECTED)
    return value


def _region(raw: dict[str, Any], i: int) -> RegionSpec:
    p = f"regions[{i}]."
    _no_unknown(raw, _REGION_KEYS, p)
    tz = _str(raw, "timezone", p)
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(p + "timezone", f"{tz!r} is not an IANA time zone name") from None
    return RegionSpec(slug=_slug(raw, p), timezone=tz)


def _bool(raw: dict[str, Any], key: str, p: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(p + key, "true or false")
    return value


def _season(raw: dict[str, Any], i: int) -> SeasonSpec:
    p = f"seasons[{i}]."
    _no_unknown(raw, _SEASON_KEYS, p)
    starts_at = _instant(raw, "starts_at", p)
    ends_at = _instant(raw, "ends_at", p)
    if ends_at <= starts_at:
        raise ConfigError(p + "ends_at", "must be after starts_at")
    return SeasonSpec(slug=_slug(raw, p), name=_str(raw, "name", p), starts_at=starts_at, ends_at=ends_at)


def _tables(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = doc.get(name, [])
    if not isinstance(value, list) or any(not isinstance(v, dict) for v in value):
        raise ConfigError(name, f"use [[{name}]] tables")
    return value


def _no_unknown(raw: dict[str, Any], allowed: set[str], prefix: str) -> None:
    for key in raw:
        if key not in allowed:
            raise ConfigError(prefix + key, f"unknown key (expected one of: {', '.join(sorted(allowed))})")


def _unique(values: list[str], table: str, key: str) -> None:
    seen: set[str] = set()
    for i, v in enumerate(values):
        if v in seen:
            raise ConfigError(f"{table}[{i}].{key}", f"{v!r} appears twice")
        seen.add(v)


def _str(raw: dict[str, Any], key: str, p: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(p + key, "a non-empty string is required")
    return value


def _slug(raw: dict[str, Any], p: str) -> str:
    value = _str(raw, "slug", p)
    if not is_slug(value):
        raise ConfigError(p + "slug", f"{value!r} is not a slug ([a-z0-9][a-z0-9-]{{0,63}})")
    return value


def _int(
    raw: dict[str, Any], key: str, p: str, default: int | None = None, low: int | None = None, high: int | None = None
) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(p + key, "an integer is required")
    if low is not None and value < low:
        raise ConfigError(p + key, f"must be at least {low}")
    if high is not None and value > high:
        raise ConfigError(p + key, f"must be at most {high}")
    return value


def _choice(raw: dict[str, Any], key: str, p: str, choices: tuple[str, ...], default: str) -> str:
    value = raw.get(key, default)
    if value not in choices:
        raise ConfigError(p + key, f"must be one of {', '.join(choices)}")
    return value


def _instant(raw: dict[str, Any], key: str, p: str) -> datetime:
    value = raw.get(key)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ConfigError(p + key, "an RFC 3339 date-time with an offset is required") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ConfigError(p + key, "an RFC 3339 date-time with an offset is required")
    return value.astimezone(UTC)
