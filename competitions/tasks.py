from celery import shared_task

from competitions.webhooks import webhooks_deliver


@shared_task(ignore_result=True)
def deliver_webhooks() -> int:
    """Beat runs it every few seconds, and a freeze queues it after its commit."""
    return webhooks_deliver()
