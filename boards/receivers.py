"""boards/ listens to scores/: the only links between ingest and the read side."""

from typing import Any

from django.dispatch import receiver

from boards import selectors, services
from scores.signals import friends_changed, score_accepted


@receiver(score_accepted, dispatch_uid="boards.mirror_accepted_scores")
def mirror_accepted_scores(
    sender: Any, outbox_id: int, entries: list[tuple[int, str, int, int]], **kwargs: Any
) -> None:
    services.outbox_entry_apply(outbox_id=outbox_id, entries=entries)


@receiver(friends_changed, dispatch_uid="boards.forget_cached_friends")
def forget_cached_friends(sender: Any, player_ids: list[int], **kwargs: Any) -> None:
    selectors.friends_cache_forget(player_ids)
