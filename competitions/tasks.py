from celery import shared_task
from django.utils import timezone

from competitions.services import tournaments_close
from competitions.webhooks import LEASE_MARGIN_SECONDS, RUN_SECONDS, webhooks_deliver, webhooks_feed_pull

# A run starts no attempt after RUN_SECONDS and each attempt ends within its 10 s deadline:
# past these limits something else is wrong, and the leased deliveries are due again anyway.
_DELIVER_SOFT_LIMIT = int(RUN_SECONDS + 10 + 2 * LEASE_MARGIN_SECONDS)


@shared_task(ignore_result=True, soft_time_limit=_DELIVER_SOFT_LIMIT, time_limit=_DELIVER_SOFT_LIMIT + 10)
def deliver_webhooks() -> int:
    """Beat runs it every 5 s, and a freeze queues it after its commit; on the `webhooks` queue,
    served by a worker of its own (docs/operations.md, "Celery queues and time limits"). First
    the events feed's subscribed events become deliveries (webhooks_feed_pull)."""
    webhooks_feed_pull()
    return webhooks_deliver()


@shared_task(ignore_result=True)
def close_tournaments() -> list[str]:
    """Beat runs it every minute: freezes the tournaments that ended (docs/competitions.md)."""
    return tournaments_close(now=timezone.now())
