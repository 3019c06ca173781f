"""How far behind the boards are: the one place that measures it (/healthz and /metrics read it).

Accepted results reach the boards in two steps (docs/architecture.md): the projector applies
stored matches to values in batches (its backlog is scores_pending), and each batch's changes
reach the sorted sets through the outbox: the post-commit path applies a row at once and marks
it applied in Redis; a row it missed (Redis down, a crash) waits for the periodic drain. The
lag of each is the age of the oldest entry not applied yet; ingest_lag() answers the larger."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from rediskit import keys
from rediskit.client import get_redis
from scores.models import BoardOutbox
from scores.projection import pending_lag

SCAN = 500  # oldest outbox rows looked at; behind those the lag is at least as large
LIMIT_SECONDS = 10.0  # /healthz calls a larger lag "behind"


@dataclass(frozen=True)
class IngestLag:
    seconds: float  # age of the oldest accepted change not yet on the boards (0: none waits)
    pending: int  # what waits: pending rows of the projector, or outbox rows
    source: str  # the step that is behind: "projector" or "outbox"


def ingest_lag() -> IngestLag:
    """The step further behind: the projector's backlog or the outbox's. Raises if Postgres or
    Redis is unreachable."""
    # The projector's backlog first: a batch deletes its pending rows and writes its outbox row
    # in one commit, so one committing between the two reads shows in the second. Read the
    # other way round it would hide from both (no outbox row yet, no pending row any more).
    projector = projector_lag()
    return max(outbox_lag(), projector, key=lambda lag: lag.seconds)


def projector_lag() -> IngestLag:
    """Matches stored but not applied to values yet (scores_pending rows)."""
    count, oldest = pending_lag()
    if oldest is None:
        return IngestLag(0.0, 0, "projector")
    return IngestLag(round(max(0.0, (timezone.now() - oldest).total_seconds()), 3), count, "projector")


def outbox_lag() -> IngestLag:
    """Values changed but not mirrored to Redis yet. Moderation rewrites are left out: they are
    applied at commit and replayed once more by design (docs/moderation.md)."""
    rows = list(BoardOutbox.objects.filter(rewrite=False).order_by("id").values_list("id", "created_at")[:SCAN])
    if not rows:
        return IngestLag(0.0, 0, "outbox")
    r = get_redis()
    applied = r.smismember(keys.OUTBOX_APPLIED, [pk for pk, _ in rows])
    waiting = [created for (_, created), done in zip(rows, applied, strict=True) if not done]
    if not waiting:
        return IngestLag(0.0, 0, "outbox")
    pending = len(waiting)
    if len(rows) == SCAN:
        pending = max(pending, BoardOutbox.objects.filter(rewrite=False).count() - r.scard(keys.OUTBOX_APPLIED))
    seconds = max(0.0, (timezone.now() - waiting[0]).total_seconds())
    return IngestLag(round(seconds, 3), pending, "outbox")
