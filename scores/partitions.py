"""Time partitions of scores_result (Postgres native range partitioning on ended_at), and of
the events feed scores_event (on the moment each chunk was published: scores/events.py).

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

from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone

log = logging.getLogger(__name__)

PARENT = "scores_result"
DEFAULT = "scores_result_default"
EVENTS = "scores_event"  # the events feed, by the day each chunk was published (scores/events.py)
DAYS_AHEAD = 7


def partition_name(day: date, *, parent: str = PARENT) -> str:
    return f"{parent}_p{day:%Y%m%d}"


def _bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(), tzinfo=UTC)
    return start, start + timedelta(days=1)


def day_partitions(parent: str = PARENT) -> list[str]:
    """Names of the day partitions of `parent` attached now, oldest first."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = %s::regclass AND c.relname <> %s ORDER BY c.relname
            """,
            [parent, f"{parent}_default"],
        )
        return [name for (name,) in cur.fetchall()]


def result_partitions() -> list[str]:
    """Names of the day partitions of scores_result attached now, oldest first."""
    return day_partitions(PARENT)


def day_partitions_ensure(parent: str, *, now: datetime | None = None, days_ahead: int = DAYS_AHEAD) -> list[str]:
    """Create the day partitions of `parent` from today (UTC) to `days_ahead` days ahead that
    are missing; return the names created. A day whose rows already sit in the default
    partition keeps them there: it is skipped, with a warning."""
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    existing = set(day_partitions(parent))
    created = []
    for offset in range(days_ahead + 1):
        day = today + timedelta(days=offset)
        name = partition_name(day, parent=parent)
        if name in existing:
            continue
        start, end = (moment.isoformat() for moment in _bounds(day))
        try:
            with transaction.atomic(), connection.cursor() as cur:
                # Made apart, then attached: ATTACH locks the parent less strongly than
                # CREATE ... PARTITION OF, so ingest keeps inserting while it runs. Postgres
                # refuses the attach if the default partition holds rows of that day. ATTACH
                # locks the default partition exclusively: behind a long reader of it, every
                # writer would queue behind the ATTACH, so it waits a second at most and the
                # day is made on a later run (days are made a week ahead).
                cur.execute("SET LOCAL lock_timeout = '1s'")
                cur.execute(f"CREATE TABLE {name} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
                cur.execute(f"ALTER TABLE {parent} ATTACH PARTITION {name} FOR VALUES FROM ('{start}') TO ('{end}')")
        except IntegrityError:
            log.warning("rows of %s are in %s_default already; that day gets no partition of its own", day, parent)
            continue
        except OperationalError as exc:  # the lock timeout
            log.warning("partition %s not made (%s); tried again on the next run", name, exc)
            break
        created.append(name)
    if created:
        log.info("made partitions %s", ", ".join(created))
    return created


def result_partitions_ensure(*, now: datetime | None = None, days_ahead: int = DAYS_AHEAD) -> list[str]:
    """The day partitions of scores_result, made ahead (day_partitions_ensure)."""
    return day_partitions_ensure(PARENT, now=now, days_ahead=days_ahead)


def event_partitions_ensure(*, now: datetime | None = None, days_ahead: int = DAYS_AHEAD) -> list[str]:
    """The day partitions of the events feed, made ahead (day_partitions_ensure)."""
    return day_partitions_ensure(EVENTS, now=now, days_ahead=days_ahead)
