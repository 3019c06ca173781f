"""boards/ listens to scores/: the only links between ingest and the read side."""

import logging
from typing import Any

from django.dispatch import receiver

from boards import selectors, services
from boards.redis import REDIS_DOWN
from scores.signals import friends_changed, score_accepted, values_rewritten

log = logging.getLogger(__name__)


@receiver(score_accepted, dispatch_uid="boards.mirror_accepted_scores")
def mirror_accepted_scores(
    sender: Any, outbox_id: int, entries: list[tuple[int, str, int, int]], **kwargs: Any
) -> None:
    services.outbox_entry_apply(outbox_id=outbox_id, entries=entries)


@receiver(friends_changed, dispatch_uid="boards.forget_cached_friends")
def forget_cached_friends(sender: Any, player_ids: list[int], **kwargs: Any) -> None:
    selectors.friends_cache_forget(player_ids)


@receiver(values_rewritten, dispatch_uid="boards.rewrite_moderated_values")
def rewrite_moderated_values(sender: Any, outbox_id: int, refs: list[tuple[int, str, int]], **kwargs: Any) -> None:
    # The outbox row is left for the drain on purpose: it rewrites once more a moment later.
    try:
        services.values_rewrite(refs)
    except REDIS_DOWN as exc:
        log.warning("Redis unavailable, %d moderated values wait in outbox row %d: %s", len(refs), outbox_id, exc)
