"""Time partitions of scores_result (Postgres native range partitioning on ended_at).

One partition per UTC day, `scores_result_pYYYYMMDD`, holding the results of matches that ended
that day, and `scores_result_default` for whatever no day partition covers (history older than
the first partition, or days that passed while nothing made partitions). The projector makes
the coming days' partitions ahead of time (on start and hourly), so a day's results land in
their own partition from its first second:

- the projector's and a void's reads of a batch's results touch only the days the batch spans;
- an old day can be detached (`ALTER TABLE scores_result DETACH PARTITION ...`) to archive it;
  its results then no longer take part in a void's recompute, which is the point of archiving.

A day partition is only attached while the default partition holds no rows of that day
(Postgres refuses otherwise), so ensuring never moves rows.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, time, timedelta

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

log = logging.getLogger(__name__)

PARENT = "scores_result"
DEFAULT = "scores_result_default"
DAYS_AHEAD = 7


def partition_name(day: date) -> str:
    return f"{PARENT}_p{day:%Y%m%d}"


def _bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(), tzinfo=UTC)
    return start, start + timedelta(days=1)


def result_partitions() -> list[str]:
    """Names of the day partitions attached now, oldest first."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = %s::regclass AND c.relname <> %s ORDER BY c.relname
            """,
            [PARENT, DEFAULT],
        )
        return [name for (name,) in cur.fetchall()]


def result_partitions_ensure(*, now: datetime | None = None, days_ahead: int = DAYS_AHEAD) -> list[str]:
    """Create the day partitions from today (UTC) to `days_ahead` days ahead that are missing;
    return the names created. A day whose rows already sit in the default partition keeps them
    there: it is skipped, with a warning."""
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    existing = set(result_partitions())
    created = []
    for offset in range(days_ahead + 1):
        day = today + timedelta(days=offset)
        name = partition_name(day)
        if name in existing:
            continue
        start, end = (moment.isoformat() for moment in _bounds(day))
        try:
            with transaction.atomic(), connection.cursor() as cur:
                # Made apart, then attached: ATTACH locks the parent less strongly than
                # CREATE ... PARTITION OF, so ingest keeps inserting while it runs. Postgres
                # refuses the attach if the default partition holds rows of that day.
                cur.execute(f"CREATE TABLE {name} (LIKE {PARENT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
                cur.execute(f"ALTER TABLE {PARENT} ATTACH PARTITION {name} FOR VALUES FROM ('{start}') TO ('{end}')")
        except IntegrityError:
            log.warning("results of %s are in %s already; that day gets no partition of its own", day, DEFAULT)
            continue
        created.append(name)
    if created:
        log.info("made result partitions %s", ", ".join(created))
    return created
