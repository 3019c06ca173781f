"""How far behind the boards are: the one place that measures it (/healthz and /metrics read it).

Today accepted results reach the sorted sets through the outbox (docs/architecture.md): the
post-commit fast path applies a row at once and marks it applied in Redis; a row it missed
(Redis down, a crash) waits for the periodic drain. The lag is the age of the oldest row not
applied yet. Whatever later applies accepted results in batches (a projector) reports its own
lag here too, and ingest_lag() answers the largest."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from boards import keys
from boards.redis import get_redis
from scores.models import BoardOutbox

SCAN = 500  # oldest outbox rows looked at; behind those the lag is at least as large
LIMIT_SECONDS = 10.0  # /healthz calls a larger lag "behind"


@dataclass(frozen=True)
class IngestLag:
    seconds: float  # age of the oldest accepted change not yet on the boards (0: none waits)
    pending: int  # accepted changes (outbox rows) not yet on the boards
    source: str  # what applies them: "outbox"


def ingest_lag() -> IngestLag:
    """Raises if Postgres or Redis is unreachable. Moderation rewrites are left out: they are
    applied at commit and replayed once more by design (docs/moderation.md)."""
    rows = list(BoardOutbox.objects.filter(rewrite=False).order_by("id").values_list("id", "created_at")[:SCAN])
    if not rows:
        return IngestLag(0.0, 0, "outbox")
    r = get_redis()
    applied = r.smismember(keys.outbox_applied(), [pk for pk, _ in rows])
    waiting = [created for (_, created), done in zip(rows, applied, strict=True) if not done]
    if not waiting:
        return IngestLag(0.0, 0, "outbox")
    pending = len(waiting)
    if len(rows) == SCAN:
        pending = max(pending, BoardOutbox.objects.filter(rewrite=False).count() - r.scard(keys.outbox_applied()))
    seconds = max(0.0, (timezone.now() - waiting[0]).total_seconds())
    return IngestLag(round(seconds, 3), pending, "outbox")
