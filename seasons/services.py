"""Closing windows: freezing final standings from Postgres, in the board order (docs/api.md §6).

The close job runs every minute (Celery beat) and by hand (`close_windows [--now T]`). For
every board window that ended more than the game's grace period ago and is not frozen yet,
it stops the window taking results (its cutoff), then copies the window's values into a new
standings version with one INSERT ... SELECT (ROW_NUMBER over the order of docs/api.md §6, scores'
SQL) into the version's own partition, never a Python loop over players. Running it twice
freezes once. Season windows wait while a held match could change their top 1000."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from scores import locks, windows
from scores.cutoffs import COUNTS_FROM, window_cutoff_set
from scores.models import Game
from scores.projection import pending_apply
from scores.selectors import BoardConfig, GameConfig, game_config, held_touching_top, window_standings_sql
from seasons.models import WindowClose, WindowFreeze

log = logging.getLogger(__name__)

# How many past windows of each kind the close job looks at (older ones were closed before).
LOOKBACK = {"daily": 7, "weekly": 5, "monthly": 3, "season": 0}
HELD_TOP = 1000


@dataclass
class CloseReport:
    frozen: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    already: int = 0
    failed: list[str] = field(default_factory=list)  # "<game>/<board> <window>: <error>"


# Called inside a freeze's transaction with (board, freeze, previous version or None): an app
# above this one writes what must commit with the freeze (competitions/' webhook outbox,
# docs/competitions.md). Registered from that app's AppConfig.ready(); seasons imports none.
FreezeHook = Callable[..., None]
_freeze_hooks: dict[str, FreezeHook] = {}


def freeze_hook_register(hook: FreezeHook, *, uid: str) -> None:
    _freeze_hooks[uid] = hook


def windows_close(*, now: datetime | None = None) -> CloseReport:
    """Freeze every ended, unfrozen window whose grace period has passed.

    One game's failure (a configuration that no longer loads, a freeze that fails) is that game's
    alone: it is logged, kept in the window's close state for the admin and reported, and every
    other board and game is still closed (docs/windows.md, "Closing and freezing")."""
    now = now or timezone.now()
    report = CloseReport()
    for game in Game.objects.order_by("id"):
        try:
            config = game_config(game)
        except Exception as exc:
            log.exception("closing windows: the configuration of %s does not load", game.slug)
            report.failed.append(f"{game.slug}: {type(exc).__name__}: {exc}")
            continue
        cutoff = now - timedelta(seconds=game.close_grace_seconds)
        for board in config.boards.values():
            _board_windows_close(board, config=config, cutoff=cutoff, report=report)
    return report


def _board_windows_close(board: BoardConfig, *, config: GameConfig, cutoff: datetime, report: CloseReport) -> None:
    # the global board, then each region's board, rolling over at its own midnight
    zones = [(None, board.reset_timezone)] + [(r.slug, r.timezone) for r in board.regions]
    candidates = [
        windows.in_region(region, w) if region else w
        for region, tz in zones
        for kind in board.windows
        if kind in LOOKBACK
        for w in windows.ended_windows(kind, cutoff, tz, config.seasons, LOOKBACK[kind])
    ]
    done = set(WindowFreeze.objects.filter(board_id=board.id, window__in=candidates).values_list("window", flat=True))
    report.already += len(done)
    for window in candidates:
        if window in done:
            continue
        label = f"{board.game_slug}/{board.slug} {window}"
        try:
            blocking = held_blocking(board, window=window, seasons=config.seasons)
            if blocking:
                _close_state(board.id, window, WindowClose.State.WAITING, blocking)
                report.waiting.append(label)
                continue
            if window_freeze(board=board, window=window, reason="window closed") is not None:
                report.frozen.append(label)
        except Exception as exc:
            log.exception("closing %s failed", label)
            report.failed.append(f"{label}: {type(exc).__name__}: {exc}")
            _close_state(board.id, window, WindowClose.State.FAILED, f"{type(exc).__name__}: {exc}"[:2000])
            window_cutoff_lift(board, window=window, config=config)


def window_cutoff_lift(board: BoardConfig, *, window: str, config: GameConfig) -> bool:
    """After a first freeze failed: take back the cutoff it set, so the window takes results
    again until a later run freezes it. Only while no match arrived for the window since the
    cutoff: the projector applied such a match without the window, and the values must keep
    agreeing with the cutoff rule (scores/cutoffs.py); then the cutoff stays and the next run's
    freeze uses it. Nothing when the window is frozen. Returns whether the cutoff was lifted."""
    start, end = windows.bounds(window, config.timezone_of(window), config.seasons) or (None, None)
    with transaction.atomic(), connection.cursor() as cur:
        # under the ingest lock, as the cutoff was set: no match is stamped on either side meanwhile
        locks.ingest_lock_exclusive(board.game_id)
        cur.execute(
            f"""
            DELETE FROM scores_windowcutoff c WHERE c.board_id = %s AND c."window" = %s
              AND NOT EXISTS (SELECT 1 FROM seasons_windowfreeze f
                              WHERE f.board_id = c.board_id AND f."window" = c."window")
              AND NOT EXISTS (SELECT 1 FROM scores_result r JOIN scores_match m ON m.id = r.match_id
                              WHERE r.board_id = c.board_id AND m.status <> 'voided' AND {COUNTS_FROM} >= c.cut_at
                                AND (%s::timestamptz IS NULL OR (r.ended_at >= %s AND r.ended_at < %s)))
            """,
            [board.id, window, start, start, end],
        )
        return cur.rowcount == 1


def held_blocking(board: BoardConfig, *, window: str, seasons: tuple[windows.SeasonSpan, ...]) -> str:
    """Why a season window must not be frozen yet ("" if it may): held matches whose
    results touch the season's top 1000 (a player in it, or a score that would enter it)."""
    if not window.startswith("season:"):
        return ""
    start, end = windows.bounds(window, board.reset_timezone, seasons)
    touching = held_touching_top(board, window=window, start=start, end=end, top=HELD_TOP)
    if not touching:
        return ""
    names = ", ".join(touching[:10])
    return (
        f"{len(touching)} held match(es) touch the top {HELD_TOP}: {names}. Approve or void them to close the season."
    )


def window_freeze(*, board: BoardConfig, window: str, reason: str, refreeze: bool = False) -> WindowFreeze | None:
    """Freeze a window's standings from Postgres as a new version.

    Without refreeze, does nothing (returns None) if a version exists. With refreeze (after
    a void), writes the next version and records who moved and by how much.

    A first freeze sets the window's cutoff before it reads the values (scores/cutoffs.py): from
    then on the window takes no more results, and everything received before has been applied,
    so the standings are exactly the values, now and after any later recompute."""
    started = time.monotonic()
    if not refreeze:
        if WindowFreeze.objects.filter(board_id=board.id, window=window).exists():
            return None
        window_cutoff_set(game_id=board.game_id, board_id=board.id, window=window)
        # everything received before the cutoff has committed: apply what the projector has not yet
        pending_apply()
    applied = time.monotonic()
    with transaction.atomic():
        with connection.cursor() as cur:
            # one freeze of a board window at a time, across processes
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"freeze:{board.id}:{window}"])
        previous = WindowFreeze.objects.filter(board_id=board.id, window=window).order_by("-version").first()
        if previous is not None and not refreeze:
            return None
        freeze = WindowFreeze.objects.create(
            board_id=board.id, window=window, version=previous.version + 1 if previous else 1, reason=reason
        )
        with connection.cursor() as cur:
            freeze.entries = _standings_write(cur, freeze_id=freeze.id, board=board, window=window)
            if previous is not None:
                cur.execute(
                    """
                    INSERT INTO seasons_standingchange (freeze_id, player_id, old_rank, new_rank, old_value, new_value)
                    SELECT %s, COALESCE(n.player_id, o.player_id), o.rank, n.rank, o.value, n.value
                    FROM (SELECT * FROM seasons_standing WHERE freeze_id = %s) n
                    FULL OUTER JOIN (SELECT * FROM seasons_standing WHERE freeze_id = %s) o ON o.player_id = n.player_id
                    WHERE n.rank IS DISTINCT FROM o.rank OR n.value IS DISTINCT FROM o.value
                    """,
                    [freeze.id, freeze.id, previous.id],
                )
        freeze.save(update_fields=["entries"])
        for hook in _freeze_hooks.values():
            hook(board, freeze=freeze, previous=previous)
        _close_state(board.id, window, WindowClose.State.FROZEN, f"version {freeze.version}: {freeze.entries} players")
    # the phases' durations: what an operator compares when a close takes longer than it did
    log.info(
        "froze %s %s v%d (%d players) in %.2f s (cutoff and pending results %.2f s): %s",
        board.slug,
        window,
        freeze.version,
        freeze.entries,
        time.monotonic() - started,
        applied - started,
        reason,
    )
    return freeze


def _standings_partition(freeze_id: int) -> str:
    return f"seasons_standing_{int(freeze_id)}"


def _standings_write(cur: CursorWrapper, *, freeze_id: int, board: BoardConfig, window: str) -> int:
    """Write a version's standings into a table of its own, then attach it as the version's
    partition of seasons_standing; returns the rows written.

    One INSERT ... SELECT in the board order (docs/api.md §6) (scores' SQL, scores/selectors/values.py) into a
    table without indexes, so nothing is maintained row by row; attaching builds its two indexes
    in one sorted pass each, and the CHECK on freeze_id spares the scan that would prove the
    rows belong there. Locks till commit: the new table's own, SHARE UPDATE EXCLUSIVE on
    seasons_standing (readers go on; another version's attach waits) and SHARE ROW EXCLUSIVE on
    seasons_windowfreeze (the foreign key's validation). Scores tables are only read (the
    player reference is not checked by Postgres, seasons/models.py): the ingest waits for nothing."""
    table = _standings_partition(freeze_id)
    select, params = window_standings_sql(board=board, window=window)
    cur.execute(
        f"CREATE TABLE {table} (LIKE seasons_standing INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED,"
        f" CHECK (freeze_id = {int(freeze_id)}))"
    )
    cur.execute(
        f"""
        INSERT INTO {table} (freeze_id, position, rank, player_id, value, reached_at, encoded)
        SELECT {int(freeze_id)}, s.* FROM ({select}) s
        """,
        params,
    )
    entries = cur.rowcount
    cur.execute(f"ALTER TABLE seasons_standing ATTACH PARTITION {table} FOR VALUES IN ({int(freeze_id)})")
    return entries


def standings_refreeze(*, board: BoardConfig, windows_: list[str], reason: str) -> list[WindowFreeze]:
    """After values changed in already frozen windows (a void): freeze them again."""
    from seasons.selectors import frozen_windows

    frozen = frozen_windows((board.id, w) for w in windows_)
    out = []
    for _, window in sorted(frozen):
        freeze = window_freeze(board=board, window=window, reason=reason, refreeze=True)
        if freeze is not None:
            out.append(freeze)
    return out


def _close_state(board_id: int, window: str, state: str, detail: str) -> None:
    WindowClose.objects.update_or_create(board_id=board_id, window=window, defaults={"state": state, "detail": detail})
