"""anticheat/ listens to scores/: matches the projector applied get the heavier checks in Celery."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.dispatch import receiver

from anticheat.after import checks_enqueue
from scores.signals import matches_applied


@receiver(matches_applied, dispatch_uid="anticheat.check_after_the_fact")
def check_after_the_fact(sender: Any, match_pks: list[int], **kwargs: Any) -> None:
    """Inside the projector's batch transaction: the backlog row commits with the values."""
    if settings.ANTICHEAT_ASYNC_CHECKS:
        checks_enqueue(match_pks=match_pks)
