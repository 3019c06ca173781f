"""The score-events feed (docs/api.md §13.1; the design in docs/architecture.md, "The events
feed"): every accepted, held, approved and voided match, every change of a player's value in a
board window, every freeze, tournament end and league move, in one order per game that a
consumer reads by cursor, exactly once.

Writing: a transaction that changes something calls `events_draft` (the projector's batch, a
moderation, a freeze); the rows wait in scores_eventdraft, which no other session sees. At
COMMIT a deferred trigger (migration 0026) takes the FEED lock (scores/locks.py), numbers them
from one sequence and moves them into scores_event; it holds the lock to the end of the commit.
So positions become visible in the order they were taken, and a reader that saw position N will
never later see one below it: "after N" loses nothing, even for a transaction that began first
and committed last. A rolled-back transaction leaves no event (its drafts go with it).

Reading: `events_page` (the API, docs/api.md §13.1). A cursor "<pos>-<i>" names event i of the
chunk at position pos; the page holds the events after it.

Retention: `events_prune` drops whole days of the feed (its partitions, scores/partitions.py)
older than EVENTS_RETENTION_DAYS, and moves the floor (scores_eventfloor) to the last event it
dropped; a cursor before the floor is expired (410).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from scores.partitions import EVENTS, day_partitions, event_partitions_ensure, partition_name

log = logging.getLogger(__name__)

# The event types (docs/api.md §13.1). The two high-volume ones are in the feed only; the
# others may also be pushed to a game's [[webhooks]] (docs/competitions.md).
MATCH_ACCEPTED = "match.accepted"
MATCH_HELD = "match.held"
MATCH_APPROVED = "match.approved"
MATCH_VOIDED = "match.voided"
VALUE_CHANGED = "value.changed"
WINDOW_FROZEN = "window.frozen"
WINDOW_REFROZEN = "window.refrozen"
TOURNAMENT_ENDED = "tournament.ended"
LEAGUE_MOVED = "league.moved"
TYPES = (
    MATCH_ACCEPTED,
    MATCH_HELD,
    MATCH_APPROVED,
    MATCH_VOIDED,
    VALUE_CHANGED,
    WINDOW_FROZEN,
    WINDOW_REFROZEN,
    TOURNAMENT_ENDED,
    LEAGUE_MOVED,
)
FEED_ONLY = (MATCH_ACCEPTED, VALUE_CHANGED)
# What [[webhooks]] receive from the feed (competitions/webhooks.py webhooks_feed_pull); the
# freezes' types reach them with the settlement body, written by the freeze itself.
PUSHED = (MATCH_HELD, MATCH_APPROVED, MATCH_VOIDED, LEAGUE_MOVED)

# Events per stored chunk: a page (at most 1000 events) reads at most two chunks' JSON.
CHUNK = 1000
LIMIT_MAX = 1000
LIMIT_DEFAULT = 100

Event = dict[str, Any]  # {"type", "at", "data"}: the id is given when it is read


def event_at(moment: datetime | None = None) -> str:
    """RFC 3339 in UTC, as the API writes times (DRF's form: microseconds, "Z")."""
    moment = (moment or timezone.now()).astimezone(UTC)
    return moment.isoformat().replace("+00:00", "Z")


def event(kind: str, data: dict[str, Any], *, at: str) -> Event:
    return {"type": kind, "at": at, "data": data}


def value_changed(*, player: str, board: str, window: str, before: int | None, after: int | None, at: str) -> Event:
    return event(
        VALUE_CHANGED, {"player": player, "board": board, "window": window, "before": before, "after": after}, at=at
    )


def events_draft(*, game_id: int, events: Sequence[Event]) -> None:
    """Write events of one game into the caller's transaction: they reach the feed when it
    commits, at positions after everything committed before (the trigger of migration 0026),
    and never if it rolls back. Call it inside the transaction that makes the change."""
    events_draft_grouped({game_id: list(events)})


def events_draft_grouped(by_game: dict[int, list[Event]]) -> None:
    """events_draft for several games at once: one statement, each game's events in order."""
    rows = [
        (game_id, events[i : i + CHUNK]) for game_id, events in by_game.items() for i in range(0, len(events), CHUNK)
    ]
    if not rows:
        return
    params: list[Any] = []
    for game_id, chunk in rows:
        pushed = any(e["type"] in PUSHED for e in chunk)
        params += [game_id, b"\n".join(map(orjson.dumps, chunk)).decode(), len(chunk), pushed]
    values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO scores_eventdraft (game_id, events, count, pushed) VALUES {values}", params)


# --- reading --------------------------------------------------------------------------------


class CursorInvalid(ValueError):
    """Not a cursor this feed gives (400 invalid_cursor)."""


class CursorExpired(Exception):
    """Events after this cursor were dropped by retention (410 cursor_expired)."""


@dataclass(frozen=True, order=True)
class Cursor:
    pos: int  # the chunk (0: before every chunk)
    idx: int  # the event within it: events after (pos, idx) come next

    def __str__(self) -> str:
        return f"{self.pos}-{self.idx}"


START = Cursor(0, 0)
# ASCII digits (\d takes other scripts' digits too); what the OpenAPI schema states
CURSOR_PATTERN = r"[0-9]{1,18}-[0-9]{1,6}"
_CURSOR = re.compile(r"([0-9]{1,18})-([0-9]{1,6})")


def cursor_parse(text: str) -> Cursor:
    match = _CURSOR.fullmatch(text)
    if match is None:
        raise CursorInvalid(f"{text[:64]!r} is not a cursor of this feed")
    return Cursor(int(match[1]), int(match[2]))


def events_floor() -> Cursor:
    """The last event retention dropped (START before the first drop)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pos, idx FROM scores_eventfloor WHERE id = 1")
        row = cur.fetchone()
    return Cursor(*row) if row else START


@dataclass
class EventsPage:
    lines: list[bytes]  # each event's JSON, with its "id" first
    next: Cursor

    @property
    def events(self) -> list[Event]:
        return [orjson.loads(line) for line in self.lines]

    def body(self) -> bytes:
        """The API's answer, written from the stored JSON without parsing it: the events' text
        as the feed keeps it, each with its id, U+2028/9 escaped as every answer here has them
        (leaderboard_project.plain.json_bytes)."""
        out = b'{"events":[' + b",".join(self.lines) + b'],"next":"' + str(self.next).encode() + b'"}'
        if b"\xe2\x80\xa8" in out or b"\xe2\x80\xa9" in out:
            out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return out


def events_page(*, game_id: int, after: Cursor | None, limit: int = LIMIT_DEFAULT) -> EventsPage:
    """The game's events after `after` (None: from the oldest kept), at most `limit`; `next` is
    the last one's cursor (or where the reader stands, if there is none yet). Raises
    CursorExpired for a cursor retention has passed."""
    floor = events_floor()
    if after is not None and after < floor:
        raise CursorExpired(f"events after {after} are older than the feed keeps")
    start = max(after or floor, floor)
    with connection.cursor() as cur:
        # which chunks the page needs (the index holds their sizes), then only their events
        cur.execute(
            "SELECT pos, count FROM scores_event WHERE game_id = %s AND pos >= %s ORDER BY pos LIMIT %s",
            [game_id, start.pos, limit + 1],
        )
        wanted, room = [], limit
        for pos, count in cur.fetchall():
            first = start.idx + 1 if pos == start.pos else 0
            if first >= count:
                continue
            wanted.append(pos)
            room -= count - first
            if room <= 0:
                break
        if not wanted:
            return EventsPage([], start)
        cur.execute(
            "SELECT pos, events FROM scores_event WHERE game_id = %s AND pos = ANY(%s) ORDER BY pos",
            [game_id, wanted],
        )
        rows = cur.fetchall()
    lines: list[bytes] = []
    last = start
    for cursor, line in _lines_after(rows, start):
        if len(lines) == limit:
            break
        last = cursor
        lines.append(b'{"id":"%d-%d",' % (cursor.pos, cursor.idx) + line[1:])
    return EventsPage(lines, last)


def _lines_after(rows: Iterable[tuple[int, str]], start: Cursor) -> Iterator[tuple[Cursor, bytes]]:
    """Each event's stored JSON line in chunks (pos, text) read in order, after `start`."""
    for pos, text in rows:
        lines = text.encode().split(b"\n")
        for i in range(start.idx + 1 if pos == start.pos else 0, len(lines)):
            yield Cursor(pos, i), lines[i]


def events_end(*, game_id: int) -> Cursor:
    """The cursor of the game's last event now (START if it has none)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pos, count FROM scores_event WHERE game_id = %s ORDER BY pos DESC LIMIT 1", [game_id])
        row = cur.fetchone()
    return max(Cursor(row[0], row[1] - 1), events_floor()) if row else events_floor()


def events_pushed(*, game_id: int, after: Cursor, chunks: int = 100) -> tuple[list[tuple[Cursor, Event]], Cursor]:
    """The game's events of a PUSHED type after `after`, from at most `chunks` chunks that hold
    one, each with its cursor; and the cursor to continue from (the last chunk read)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pos, events FROM scores_event WHERE game_id = %s AND pushed AND pos >= %s ORDER BY pos LIMIT %s",
            [game_id, after.pos, chunks],
        )
        rows = cur.fetchall()
    found: list[tuple[Cursor, Event]] = []
    last = after
    for last, line in _lines_after(rows, after):  # the last line read is where the next pull starts
        event = orjson.loads(line)
        if event["type"] in PUSHED:
            found.append((last, event))
    return found, last


# --- retention ------------------------------------------------------------------------------


def partition_name_of(moment: datetime) -> str:
    """The feed's partition of the day `moment` falls on (UTC)."""
    return partition_name(moment.astimezone(UTC).date(), parent=EVENTS)


def _partition_day(name: str) -> date:
    return datetime.strptime(name.rsplit("_p", 1)[1], "%Y%m%d").date()


def events_prune(*, now: datetime | None = None, days: int | None = None) -> int:
    """Drop the days of the feed older than `days` (EVENTS_RETENTION_DAYS) and make the coming
    days' partitions; returns how many chunks were dropped. Each drop moves the floor to its last
    event first, in the same transaction. A drop waits at most a second for readers of the
    feed (DROP locks the table), and is tried again on the next run."""
    now = now or timezone.now()
    days = settings.EVENTS_RETENTION_DAYS if days is None else days
    # a day is dropped once all of it is older than the retention: kept at least `days`
    keep_from = (now - timedelta(days=days)).astimezone(UTC).date()
    dropped = 0
    for name in day_partitions(EVENTS):
        if _partition_day(name) + timedelta(days=1) > keep_from:
            break
        try:
            with transaction.atomic(), connection.cursor() as cur:
                cur.execute("SET LOCAL lock_timeout = '1s'")
                gone = _floor_raise(cur, f"SELECT pos, count FROM {name}")
                cur.execute(f"DROP TABLE {name}")
            dropped += gone
        except DatabaseError:
            log.warning("events partition %s is busy; dropped on a later run", name)
            break
    # anything that fell into the default partition (no day partition existed for it)
    cutoff = datetime.combine(keep_from, datetime.min.time(), tzinfo=UTC)
    with transaction.atomic(), connection.cursor() as cur:
        where = f"FROM {EVENTS}_default WHERE at < %s"
        dropped += _floor_raise(cur, f"SELECT pos, count {where}", [cutoff])
        cur.execute(f"DELETE {where}", [cutoff])
    event_partitions_ensure(now=now)
    if dropped:
        log.info("events feed: dropped %d chunk(s) published before %s", dropped, keep_from)
    return dropped


def _floor_raise(cur: Any, chunks_sql: str, params: Sequence[Any] = ()) -> int:
    """Move the floor to the last event of the chunks about to be dropped; return how many."""
    cur.execute(
        f"""
        WITH gone AS ({chunks_sql}), last AS (SELECT pos, count FROM gone ORDER BY pos DESC LIMIT 1)
        INSERT INTO scores_eventfloor (id, pos, idx) SELECT 1, pos, count - 1 FROM last
        ON CONFLICT (id) DO UPDATE SET pos = EXCLUDED.pos, idx = EXCLUDED.idx
            WHERE (EXCLUDED.pos, EXCLUDED.idx) > (scores_eventfloor.pos, scores_eventfloor.idx)
        RETURNING (SELECT count(*) FROM gone)
        """,
        list(params),
    )
    row = cur.fetchone()
    if row is None:  # nothing to drop, or the floor is past it already
        cur.execute(f"SELECT count(*) FROM ({chunks_sql}) gone", list(params))
        row = cur.fetchone()
    return row[0]
