"""Seasons and frozen standings (contract section 10): scheduled window and season closes
and the frozen standings served for rewards. Not built yet: seasons are configured with the
game (scores.models.Season) and their windows are already kept (season:<slug>)."""
