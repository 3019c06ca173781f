"""Window cutoffs: when a board window stops taking results (scores.WindowCutoff).

A window's cutoff is set once, when its standings are first frozen. A match counts in the window
only if it began to count before the cutoff (COUNTS_FROM below: received_at, or the approval of
a match held on arrival). The projector, the moderation recompute and the freeze all use this
one rule, so a window's values, any later recompute of them and its frozen standings agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import connection, transaction

from scores import locks, pgarrays

# SQL: when match `m` began to count (see Match.counts_from).
COUNTS_FROM = "COALESCE(m.counts_from, m.received_at)"

Pair = tuple[int, str]  # board_id, window


def window_cutoff_set(*, game_id: int, board_id: int, window: str) -> datetime:
    """Stop a window taking results from now on, and return its cutoff (the first one, if it
    was set before). When this returns, every match received before the cutoff has committed:
    once the caller has applied what is pending (scores.projection.pending_apply), the window's
    values hold them all and a freeze may read them.

    Must not run inside a longer transaction: the game's ingest waits while the cutoff is set."""
    with transaction.atomic():
        locks.ingest_lock_exclusive(game_id)
        with connection.cursor() as cur:
            cur.execute(
                """
                INSERT INTO scores_windowcutoff (board_id, "window", cut_at) VALUES (%s, %s, clock_timestamp())
                ON CONFLICT (board_id, "window") DO NOTHING
                """,
                [board_id, window],
            )
            cur.execute(
                'SELECT cut_at FROM scores_windowcutoff WHERE board_id = %s AND "window" = %s', [board_id, window]
            )
            return cur.fetchone()[0]


def cutoffs_of(pairs: Iterable[Pair]) -> dict[Pair, datetime]:
    """The cutoffs of those of these board windows that have one, in one query."""
    pairs = sorted(set(pairs))
    if not pairs:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT c.board_id, c."window", c.cut_at
            FROM unnest(%s::bigint[], %s::text[]) AS u(b, w)
            JOIN scores_windowcutoff c ON c.board_id = u.b AND c."window" = u.w
            """,
            [pgarrays.ints(b for b, _ in pairs), pgarrays.texts(w for _, w in pairs)],
        )
        return {(b, w): at for b, w, at in cur.fetchall()}
