"""The board outbox (scores.BoardOutbox): which values committed to Postgres the sorted sets may
still lack. The projector's batch writes a row in its transaction (scores/projection/values.py),
a moderation recompute writes a rewrite row (scores/recompute.py); boards/ marks a row applied
once Redis has its values and the periodic drain replays what was not (boards/services.py)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator

from django.db import connection


def outbox_insert(entries: list[list], *, rewrite: bool = False) -> int:
    # what BoardOutbox.objects.create() does, without the ORM's per-call work on the hot path
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO scores_boardoutbox (created_at, entries, rewrite) VALUES (clock_timestamp(), %s::jsonb, %s) "
            "RETURNING id",
            [json.dumps(entries, separators=(",", ":")), rewrite],
        )
        return cur.fetchone()[0]


def outbox_entries(refs: Iterable[tuple[int, str, int]]) -> list[list]:
    """The outbox row's entries: player ids grouped per (board, window), see BoardOutbox."""
    grouped: dict[tuple[int, str], list[int]] = defaultdict(list)
    for board_id, window, player_id in refs:
        grouped[(board_id, window)].append(player_id)
    return [[b, w, players] for (b, w), players in grouped.items()]


def outbox_refs(entries: list[list]) -> Iterator[tuple[int, str, int]]:
    """(board_id, window, player_id) of an outbox row's entries, grouped or (older rows) not."""
    for board_id, window, players in entries:
        if isinstance(players, list):
            for player_id in players:
                yield board_id, window, player_id
        else:
            yield board_id, window, players
