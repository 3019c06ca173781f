from celery import shared_task

from anticheat import after


@shared_task(ignore_result=True)
def check_pending() -> int:
    """The heavier checks on every applied match in the backlog (woken by the projector, and beat's sweep)."""
    return after.checks_drain()


@shared_task(ignore_result=True)
def refresh_stats() -> int:
    """Recompute the boards' recent statistics the board_top and server_outlier rules use."""
    return after.board_stats_refresh()
