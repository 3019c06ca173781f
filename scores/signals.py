"""Signals scores/ sends. Receivers live in the apps that care (boards/ mirrors to Redis)."""

from django.dispatch import Signal

# Sent after the projector's (or an approval's) transaction that changed values commits.
# kwargs: outbox_id: int, values: list[scores.selectors.EncodedValue] (board_id, window, player_id, encoded)
score_accepted = Signal()

# Sent after a friend list change commits. kwargs: player_ids: list[int] whose lists changed.
friends_changed = Signal()

# Sent inside the projector's transaction that applies accepted matches to values, before it
# commits: what a receiver writes commits with the values or not at all (anticheat/ records the
# matches for its checks after the fact). kwargs: match_pks: list[int] (of any games; held or
# voided ones among them are skipped by the checks)
matches_applied = Signal()

# Sent after a moderation transaction (void, hold) commits: these values were recomputed and
# must be rewritten with absolute writes, which may lower or remove them.
# kwargs: outbox_id: int, refs: list[tuple[board_id, window, player_id]]
values_rewritten = Signal()

# Sent after a game configuration change that re-shards boards commits (a board's `shards`
# changed): their sorted sets must be rebuilt in the new layout. kwargs: board_ids: list[int]
boards_resharded = Signal()
