"""The durable core's HTTP endpoints (DRF), one module per part of the contract:

- matches.py: submitting results, one match or a batch (section 4)
- players.py: players' tokens, login links and friend lists (sections 5 and 7)
- games.py: the public description of a game (section 12)
- common.py: what the game-server endpoints share (authentication, the game, the errors)

Moderation (void, approve) is anticheat/api.py's; reads of boards are boards/api/'s.
"""
