from celery import shared_task

from boards import services
from boards.histogram import histograms_refresh
from boards.rolling import rolling_windows_refresh


@shared_task(ignore_result=True)
def sync_pending() -> int:
    """Replay outbox rows the post-commit path missed; rebuild if Redis lost the index."""
    return services.board_index_heal()


@shared_task(ignore_result=True)
def refresh_rolling() -> int:
    """Rebuild the rolling windows (last7d, last30d) from the daily windows."""
    return rolling_windows_refresh().windows


@shared_task(ignore_result=True)
def refresh_histograms() -> int:
    """Rebuild the score histograms of board windows that changed."""
    return histograms_refresh().built
