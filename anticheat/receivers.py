"""anticheat/ listens to scores/: matches the projector applied get the heavier checks in Celery."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.dispatch import receiver

from rediskit.client import REDIS_DOWN, log_unavailable
from scores.signals import matches_applied

log = logging.getLogger(__name__)


@receiver(matches_applied, dispatch_uid="anticheat.check_after_the_fact")
def check_after_the_fact(sender: Any, match_pks: list[int], **kwargs: Any) -> None:
    if not settings.ANTICHEAT_ASYNC_CHECKS:
        return
    from anticheat.after import checks_enqueue

    try:
        checks_enqueue(match_pks)
    except REDIS_DOWN as exc:  # the queue and the broker are Redis: a submission must succeed without it
        log_unavailable(log, "could not enqueue anti-cheat checks of %d match(es): %s", len(match_pks), exc=exc)
    except Exception as exc:
        log.warning("could not enqueue anti-cheat checks of %d match(es): %s", len(match_pks), exc)
