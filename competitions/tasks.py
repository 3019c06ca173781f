from celery import shared_task
from django.utils import timezone

from competitions.services import tournaments_close
from competitions.webhooks import webhooks_deliver


@shared_task(ignore_result=True)
def deliver_webhooks() -> int:
    """Beat runs it every few seconds, and a freeze queues it after its commit."""
    return webhooks_deliver()


@shared_task(ignore_result=True)
def close_tournaments() -> list[str]:
    """Beat runs it every minute: freezes the tournaments that ended (docs/competitions.md)."""
    return tournaments_close(now=timezone.now())
