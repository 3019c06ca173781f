"""gunicorn's settings module (scripts/web.py: -c python:leaderboard_project.gunicorn_conf)."""


def child_exit(server, worker) -> None:  # noqa: ANN001  (gunicorn's hook signature)
    """A worker's live gauges (open websockets) stop counting when it exits (/metrics runs in
    prometheus-client's multiprocess mode; its counters stay: what happened, happened)."""
    import os

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
