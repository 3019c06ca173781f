"""Frozen standings (contract section 10): the final order of a board window, copied from
Postgres when the window closes, kept in versions (a void after the freeze makes a new one)."""

from django.db import models

from scores.models import TXID, Board, Player


class WindowClose(models.Model):
    """What the close job decided about one board window: frozen, or waiting and why."""

    class State(models.TextChoices):
        WAITING = "waiting"
        FROZEN = "frozen"

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="closes")
    window = models.CharField(max_length=80)
    state = models.CharField(max_length=8, choices=State.choices)
    detail = models.TextField(blank=True, default="")
    checked_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["board", "window"], name="windowclose_unique")]

    def __str__(self) -> str:
        return f"{self.board} {self.window}: {self.state}"


class WindowFreeze(models.Model):
    """One version of a window's frozen standings. Versions are never changed or deleted."""

    board = models.ForeignKey(Board, on_delete=models.PROTECT, related_name="freezes")
    window = models.CharField(max_length=80)
    version = models.PositiveIntegerField()
    frozen_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=300)
    entries = models.PositiveIntegerField(default=0)
    # the Postgres transaction that froze it: a re-freeze shares it with the void's audit entries
    # (anticheat.AuditEntry.xact), which say why this version exists
    xact = models.BigIntegerField(db_default=TXID, null=True, editable=False, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["board", "window", "version"], name="windowfreeze_unique")]
        ordering = ["board_id", "window", "-version"]

    def __str__(self) -> str:
        return f"{self.board} {self.window} v{self.version}"


class Standing(models.Model):
    freeze = models.ForeignKey(WindowFreeze, on_delete=models.PROTECT, related_name="standings")
    position = models.PositiveIntegerField()  # 1-based, contract section 6 order
    rank = models.PositiveIntegerField()  # as displayed (competition rank on shared boards)
    # PROTECT: a frozen row outlives nothing it names (scores/models.py, before Match)
    player = models.ForeignKey(Player, on_delete=models.PROTECT, related_name="+", db_index=False)
    value = models.BigIntegerField()
    reached_at = models.DateTimeField()
    encoded = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["freeze", "position"], name="standing_unique_position")]
        indexes = [models.Index(fields=["freeze", "player"], name="standing_freeze_player")]

    def __str__(self) -> str:
        return f"#{self.rank} {self.player_id}"


class StandingChange(models.Model):
    """Who moved, and by how much, between a freeze and the version before it."""

    freeze = models.ForeignKey(WindowFreeze, on_delete=models.PROTECT, related_name="changes")
    player = models.ForeignKey(Player, on_delete=models.PROTECT, related_name="+")
    old_rank = models.PositiveIntegerField(null=True)
    new_rank = models.PositiveIntegerField(null=True)
    old_value = models.BigIntegerField(null=True)
    new_value = models.BigIntegerField(null=True)

    def __str__(self) -> str:
        return f"{self.player_id}: {self.old_rank} -> {self.new_rank}"
