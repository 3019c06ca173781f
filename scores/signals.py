"""Signals scores/ sends. Receivers live in the apps that care (boards/ mirrors to Redis)."""

from django.dispatch import Signal

# Sent after the ingest transaction commits.
# kwargs: outbox_id: int, entries: list[tuple[board_id, window, player_id, encoded]]
score_accepted = Signal()

# Sent after a friend list change commits. kwargs: player_ids: list[int] whose lists changed.
friends_changed = Signal()
