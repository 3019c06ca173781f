"""boards/ listens to scores/: the only link between ingest and the sorted sets."""

from typing import Any

from django.dispatch import receiver

from boards import services
from scores.signals import score_accepted


@receiver(score_accepted, dispatch_uid="boards.mirror_accepted_scores")
def mirror_accepted_scores(
    sender: Any, outbox_id: int, entries: list[tuple[int, str, int, int]], **kwargs: Any
) -> None:
    services.outbox_entry_apply(outbox_id=outbox_id, entries=entries)
