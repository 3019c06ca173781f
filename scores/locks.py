"""How ingest, the projector, moderation and freezes stay out of each other's way: the advisory
locks, the projector's lanes and the channel that wakes it.

Transaction-level advisory locks keyed (namespace, number):

- INGEST (number = game id). Every ingest statement takes it *shared* and stamps its matches'
  received_at after taking it; a window's cutoff is set under it *exclusive*
  (cutoffs.window_cutoff_set). So when the cutoff is stamped every match received before it
  has committed, and every later one is stamped after it: received_at < cut_at divides the
  matches exactly, with no in-flight request on the wrong side.
- APPLY (number = projector lane). Held by whoever applies a lane's pending matches to
  values: the projector for one batch, a void or approval while it drains and recomputes.
  Two appliers of one lane never interleave, so a recompute never counts a result the
  projector is about to add once more.

- ADMIT (number 0): taken by a large submission before it stores anything, until it commits,
  so large submissions pass admission control one at a time, each seeing the ones before it
  in the backlog (scores/admission.py).

- FEED (number 0): taken by the events feed's trigger at COMMIT, after every other statement,
  and held to the end of the commit: positions become visible in the order they were taken
  (scores/events.py). Always the last lock a transaction takes.

And a session-level one, OWN (number = lane): a projector process owns a lane while it holds
it on its LISTEN connection (scores/projection/runner.py).

Lock order, everywhere: ADMIT before INGEST before APPLY, lanes in ascending order.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

INGEST = 7301
APPLY = 7302
OWN = 7303
ADMIT = 7304
FEED = 7305  # the events feed's positions: taken at COMMIT by scores_event_publish (migration 0026)

# The projector's lanes: a result belongs to lane player pk modulo LANES, and each lane is
# applied by one applier at a time (its APPLY lock), so up to LANES projector processes run side
# by side. Changing it: stop the projectors, let scores_pending empty, change, start them again.
LANES = 16
ALL_LANES = tuple(range(LANES))

# Each submission NOTIFYs it after its commit; the projector LISTENs.
NOTIFY_CHANNEL = "lb_projector"


def lane_of(player_id: int) -> int:
    return player_id % LANES


def admit_lock() -> None:
    """Wait for the large submissions admitted before this one to commit (scores/admission.py)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, 0)", [ADMIT])


def ingest_lock_exclusive(game_id: int) -> None:
    """Wait for every ingest statement of the game in flight to commit; hold new ones off until
    the caller's transaction ends. Keep that transaction short."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [INGEST, game_id])


def ingest_lock_shared(game_id: int) -> None:
    """What an ingest statement takes in SQL itself (scores/ingest/), for other writers that
    stamp when a match begins to count (an approval)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock_shared(%s, %s)", [INGEST, game_id])


def apply_lock(lanes: Iterable[int]) -> None:
    """Take the apply lock of these lanes, waiting for a projector batch that holds one."""
    wanted = sorted(set(lanes))
    if wanted:
        with connection.cursor() as cur:
            cur.execute("SELECT count(pg_advisory_xact_lock(%s, p)) FROM unnest(%s::int[]) AS u(p)", [APPLY, wanted])


def apply_lock_try(lanes: Iterable[int]) -> list[int]:
    """Take the apply locks that are free now; return their lanes (the projector skips a lane a
    void or an approval is working on, and comes back to it next round)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT p FROM unnest(%s::int[]) AS u(p) WHERE pg_try_advisory_xact_lock(%s, p) ORDER BY p",
            [sorted(set(lanes)), APPLY],
        )
        return [p for (p,) in cur.fetchall()]
