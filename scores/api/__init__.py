"""The durable core's HTTP endpoints (DRF), one module per part of docs/api.md:

- matches.py: submitting results, one match or a batch (docs/api.md §4)
- players.py: players' tokens, login links and friend lists (docs/api.md §3.2, §7)
- games.py: the public description of a game (docs/api.md §5.1)
- common.py: what the game-server endpoints share (authentication, the game, the errors)

Moderation (void, approve) is anticheat/api.py's; reads of boards are boards/api/'s.
"""
