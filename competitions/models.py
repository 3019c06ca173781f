"""Tournaments' own tables (docs/competitions.md). A tournament is a board whose
`tournament` settings are set (scores.Board); these rows say who joined and how many of
their results counted. Every count is decided by a conditional write, never a prior read."""

from __future__ import annotations

from django.db import models

from scores.models import Board, Player


class TournamentSize(models.Model):
    """How many players joined a tournament: the one row a join's conditional UPDATE
    (`size < max_size`) increments, so concurrent joins never pass max_size."""

    board = models.OneToOneField(Board, on_delete=models.CASCADE, primary_key=True, related_name="+")
    size = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.board_id}: {self.size} joined"


class TournamentEntry(models.Model):
    """A player who joined; the unique constraint makes joining twice harmless."""

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="+")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["board", "player"], name="tournament_entry_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.player_id} in {self.board_id}"


class TournamentAttempt(models.Model):
    """A player's counted results in one period of a tournament (`all`, or the day or week of
    a recurring one). `used` never passes max_attempts: the submission's UPDATE says
    `used < max_attempts`; `granted` is what the last such UPDATE added (its RETURNING)."""

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="+")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")
    period = models.CharField(max_length=32)
    used = models.PositiveIntegerField(default=0)
    granted = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["board", "player", "period"], name="tournament_attempt_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.player_id} in {self.board_id} ({self.period}): {self.used}"
