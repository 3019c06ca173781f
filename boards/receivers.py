"""boards/ listens to scores/: the only links between ingest and the read side."""

import logging
from collections.abc import Iterable
from typing import Any

from django.dispatch import receiver

from boards import live, services
from boards.profiles import friends_cache_forget
from rediskit.client import REDIS_DOWN, log_unavailable
from scores.models import Board
from scores.selectors import EncodedValue, config_cache_clear
from scores.signals import boards_resharded, friends_changed, score_accepted, values_rewritten

log = logging.getLogger(__name__)


@receiver(score_accepted, dispatch_uid="boards.mirror_accepted_scores")
def mirror_accepted_scores(sender: Any, outbox_id: int, values: list[EncodedValue], **kwargs: Any) -> None:
    if services.outbox_entry_apply(outbox_id=outbox_id, values=values):
        _live_notify((board_id, window) for board_id, window, _, _ in values)


@receiver(friends_changed, dispatch_uid="boards.forget_cached_friends")
def forget_cached_friends(sender: Any, player_ids: list[int], **kwargs: Any) -> None:
    friends_cache_forget(player_ids)


@receiver(values_rewritten, dispatch_uid="boards.rewrite_moderated_values")
def rewrite_moderated_values(sender: Any, outbox_id: int, refs: list[tuple[int, str, int]], **kwargs: Any) -> None:
    # The outbox row is left for the drain on purpose: it rewrites once more a moment later.
    try:
        services.values_rewrite(refs)
    except REDIS_DOWN as exc:
        log_unavailable(
            log, "Redis unavailable, %d moderated values wait in outbox row %d: %s", len(refs), outbox_id, exc=exc
        )
        return
    _live_notify((board_id, window) for board_id, window, _ in refs)


@receiver(boards_resharded, dispatch_uid="boards.rebuild_resharded_boards")
def rebuild_resharded_boards(sender: Any, board_ids: list[int], **kwargs: Any) -> None:
    """A board's `shards` changed: its windows move to the new layout (docs/game-config.md).
    Other processes follow within the configuration cache's few seconds: a write they make
    to the old layout after the rebuild's catch-up is missing from the new one until the
    sampler (boards/healing.py) or another rebuild repairs it (docs/game-config.md)."""
    config_cache_clear()
    try:
        report = services.boards_rebuild(boards=Board.objects.filter(id__in=board_ids))
    except REDIS_DOWN as exc:
        log_unavailable(log, "Redis unavailable, re-sharded boards %s wait for a rebuild: %s", board_ids, exc=exc)
        return
    log.warning("Re-sharded boards %s rebuilt: %d entries in %.1f s", board_ids, report.entries, report.seconds)


def _live_notify(pairs: Iterable[tuple[int, str]]) -> None:
    """The values are in Redis: tell the websockets (boards/live.py coalesces). The change is
    committed and mirrored already, so a failure here is logged, never the caller's error."""
    try:
        live.windows_changed(pairs)
    except REDIS_DOWN as exc:
        log_unavailable(log, "live: board changes not published: %s", exc=exc)
    except Exception:
        log.exception("live: publishing board changes failed")
