import logging

from celery import shared_task

from boards import healing, index, live, services
from boards.histogram import histograms_refresh
from boards.rolling import rolling_windows_refresh
from leaderboard_project.replicas import lagging_reads
from rediskit.client import REDIS_DOWN, log_unavailable

log = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def sync_pending() -> int:
    """Replay outbox rows the post-commit path missed; rebuild if Redis lost the index."""
    rebuilding = not index.built()
    try:
        replayed = healing.failover_replay()
    except REDIS_DOWN as exc:  # a node of the cluster unreachable: the drain below still runs
        log_unavailable(log, "index: cluster topology not read: %s", exc=exc)
        replayed = 0
    replayed += services.board_index_heal()
    if replayed or rebuilding:
        live.watched_changed()  # the drain does not say which windows it touched
    return replayed


@shared_task(ignore_result=True)
def refresh_rolling() -> int:
    """Rebuild the rolling windows (last7d, last30d) from the daily windows."""
    refreshed = rolling_windows_refresh().windows
    live.watched_changed(rolling_only=True)
    return refreshed


@shared_task(ignore_result=True)
def refresh_histograms() -> int:
    """Rebuild the score histograms of board windows that changed (what it reads of Postgres may
    come from a replica)."""
    with lagging_reads():
        return histograms_refresh().built


@shared_task(ignore_result=True)
def live_flush() -> int:
    """The trailing edge of live updates: publish changes held back by the per-second limit."""
    return live.flush_due()


@shared_task(ignore_result=True)
def sample_index() -> int:
    """Compare a sample of every live board window with Postgres; repair and count drift."""
    return healing.index_sample_check().drift
