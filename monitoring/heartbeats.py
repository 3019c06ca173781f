"""Heartbeats of the Celery worker and beat, kept in Redis (keys in rediskit/keys.py).

- worker: a bootstep ticks on the worker's own timer every HEARTBEAT_SECONDS and writes
  {hostname: time} into a hash, so each worker is seen, busy or idle;
- beat: every task beat sends (several a second) stamps its key, at most once a second.

A heartbeat older than STALE_SECONDS reads as stale: that component is down or stuck.
Standard imports only at module level: leaderboard_project/celery.py loads this before Django."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from celery import bootsteps

from rediskit import keys

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
STALE_SECONDS = float(os.environ.get("HEARTBEAT_STALE_SECONDS", "30"))
FORGET_SECONDS = 24 * 3600  # a worker silent this long leaves the list


def _redis():  # noqa: ANN202  (lazy: Django is set up by then)
    from rediskit.client import get_redis

    return get_redis()


def worker_beat(hostname: str) -> None:
    _redis().hset(keys.HEARTBEAT_WORKERS, hostname, json.dumps({"at": time.time(), "pid": os.getpid()}))


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Registered in leaderboard_project/celery.py: app.steps["worker"].add(WorkerHeartbeat)."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref = None

    def start(self, worker: Any) -> None:
        self._beat(worker)
        self.tref = worker.timer.call_repeatedly(HEARTBEAT_SECONDS, self._beat, (worker,), priority=10)

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None

    def _beat(self, worker: Any) -> None:
        try:
            worker_beat(worker.hostname)
        except Exception as exc:  # Redis down: the worker goes on; /healthz shows it stale
            log.warning("worker heartbeat not written: %s", exc)


_in_beat = False
_last_beat = 0.0


def beat_started(sender: Any = None, **kwargs: Any) -> None:
    """celery beat_init: this process is beat."""
    global _in_beat
    _in_beat = True
    beat_published()


def beat_published(sender: Any = None, **kwargs: Any) -> None:
    """celery before_task_publish: in beat, stamp its heartbeat (at most once a second)."""
    global _last_beat
    now = time.time()
    if not _in_beat or now - _last_beat < 1.0:
        return
    _last_beat = now
    try:
        _redis().set(keys.HEARTBEAT_BEAT, json.dumps({"at": now, "pid": os.getpid()}))
    except Exception as exc:
        log.warning("beat heartbeat not written: %s", exc)


@dataclass(frozen=True)
class Heartbeat:
    component: str  # "worker" or "beat"
    age: float | None  # seconds since the latest heartbeat; None: never seen
    detail: dict[str, float]  # worker: hostname -> age

    @property
    def fresh(self) -> bool:
        return self.age is not None and self.age <= STALE_SECONDS


def heartbeats_read(*, now: float | None = None) -> list[Heartbeat]:
    """The latest heartbeat of the workers (the freshest of them) and of beat. Raises if Redis is down."""
    now = time.time() if now is None else now
    r = _redis()
    pipe = r.pipeline(transaction=False)
    pipe.hgetall(keys.HEARTBEAT_WORKERS)
    pipe.get(keys.HEARTBEAT_BEAT)
    workers_raw, beat_raw = pipe.execute()
    workers: dict[str, float] = {}
    for host, raw in workers_raw.items():
        age = now - json.loads(raw)["at"]
        if age > FORGET_SECONDS:
            r.hdel(keys.HEARTBEAT_WORKERS, host)
            continue
        workers[host.decode() if isinstance(host, bytes) else host] = round(age, 3)
    beat_age = round(now - json.loads(beat_raw)["at"], 3) if beat_raw else None
    return [
        Heartbeat("worker", min(workers.values()) if workers else None, workers),
        Heartbeat("beat", beat_age, {}),
    ]


@dataclass(frozen=True)
class BoardIndex:
    built: bool
    built_at: str | None  # when the last full rebuild began (ISO), if the marker is there


def board_index_state() -> BoardIndex:
    """Whether Redis holds the index built from Postgres (boards.services.boards_rebuild sets the
    marker; Redis restarted or flushed has none, and the periodic job rebuilds within seconds)."""
    from boards import index  # not at import time: celery imports this module before the apps load

    raw = index.index().get(keys.BUILT_MARKER)  # on the cluster with REDIS_CLUSTER_URL
    if raw is None:
        return BoardIndex(False, None)
    return BoardIndex(True, raw.decode() if isinstance(raw, bytes) else str(raw))


def index_drift() -> tuple[int, int]:
    """(sampled, drift) totals of the board index sampler (boards/healing.py)."""
    sampled, drift = _redis().hmget(keys.HEAL_STATS, "sampled", "drift")
    return int(sampled or 0), int(drift or 0)
