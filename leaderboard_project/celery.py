import os

from celery import Celery
from celery.signals import beat_init, before_task_publish

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard_project.settings")

app = Celery("leaderboard_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Heartbeats for /healthz and /metrics (monitoring/heartbeats.py): the worker's from a bootstep
# on its own timer, beat's from each task it sends.
from monitoring import heartbeats  # noqa: E402  (after the settings module is known)

app.steps["worker"].add(heartbeats.WorkerHeartbeat)
beat_init.connect(heartbeats.beat_started, dispatch_uid="monitoring.beat_started")
before_task_publish.connect(heartbeats.beat_published, dispatch_uid="monitoring.beat_published")
