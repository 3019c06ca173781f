from celery import shared_task

from boards import services


@shared_task(ignore_result=True)
def sync_pending() -> int:
    """Replay outbox rows the post-commit path missed; rebuild if Redis lost the index."""
    return services.board_index_heal()
