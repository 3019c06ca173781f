"""The moderators' admin, one module per page family:

- voiding.py: void (always after a preview of what it changes) and approve, shared by the pages below
- queue.py: the review queue (held and flagged matches, with context)
- matches.py: every match (search by player, server key, board, time) and the player page
  (results per board, current ranks); they extend scores/admin.py's base pages
- audit.py: the audit log (read-only for everyone), with its targets as columns
- freezes.py: a frozen window's page (seasons/admin.py) with the audit entries that explain its version
- keys.py: server keys (scores/admin.py's page) with the revoke action
- moderators.py: who moderates which game (superusers only)

Every page is a scores.scoping.GameScopedAdmin: a moderator sees and acts on their games only.
"""

from anticheat.admin import audit, freezes, keys, matches, moderators, queue  # noqa: F401  (each registers its pages)
