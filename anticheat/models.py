"""Anti-cheat and moderation (docs/api.md §8): the audit log, why a match is under review,
the per-player submission counters of the rate rule, and the statistics the heavier rules
compare against. The review queue is a proxy of scores.Match (ReviewMatch)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from scores.models import TXID, Board, Game, Match, Player, ServerKey


class AuditEntry(models.Model):
    """One moderation or anti-cheat action. Append-only: written in the action's own
    transaction, never changed or deleted (the admin grants no add, change or delete)."""

    class Action(models.TextChoices):
        REJECT = "reject", "Rejected by a rule"
        HOLD = "hold", "Held for review"
        FLAG = "flag", "Flagged for review"
        APPROVE = "approve", "Approved"
        VOID = "void", "Voided"
        VOID_BULK = "void_bulk", "Voided in bulk"
        REVOKE_KEY = "revoke_key", "Server key revoked"
        ERASE_PLAYER = "erase_player", "Player erased"

    game_path = "game"  # the admin's per-game scoping (scores/scoping.py)

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    action = models.CharField(max_length=16, choices=Action.choices)
    # who: a staff user, a server key (the API), or the rules themselves (both NULL, actor says which)
    actor_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    actor_key = models.ForeignKey(
        ServerKey, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_actions"
    )
    actor = models.CharField(max_length=150, help_text="who acted, as text (kept if the user or key goes away)")
    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="+")
    # what it concerned; a rejected match was never stored, so its id is kept as text
    match = models.ForeignKey(Match, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_entries")
    match_ref = models.CharField(max_length=128, blank=True, default="")
    player = models.ForeignKey(Player, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    server_key = models.ForeignKey(ServerKey, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField()
    details = models.JSONField(default=dict, blank=True)
    # The Postgres transaction that wrote the entry (set by the database). A void re-freezes the
    # frozen windows it touches in the same transaction, so the re-frozen versions
    # (seasons.WindowFreeze.xact) and the void's entries share it: that is how a freeze's diff
    # page names the audit entries that explain it, and the audit log the windows an entry re-froze.
    xact = models.BigIntegerField(db_default=TXID, null=True, editable=False, db_index=True)

    class Meta:
        verbose_name = "audit log entry"
        verbose_name_plural = "audit log"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["match_ref"], name="audit_match_ref")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.action} {self.match_ref} by {self.actor}"


class MatchFlag(models.Model):
    """Why a match is in the review queue: a rule held or flagged it. Resolved by an approve
    or a void."""

    game_path = "match__game"

    match = models.ForeignKey(Match, on_delete=models.CASCADE, related_name="flags")
    rule = models.CharField(max_length=40)
    action = models.CharField(max_length=8)  # hold | flag
    reason = models.TextField()
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["match"], name="matchflag_open", condition=models.Q(resolved_at__isnull=True))]

    def __str__(self) -> str:
        return f"{self.rule}: {self.reason}"


class SubmissionRate(models.Model):
    """Matches per player in the current rate window (the max_matches_per_minute rule).
    A fixed window that opens at the first submission after the previous one expired."""

    # db_index=False: the unique (game, player) index already leads with game
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="+", db_index=False)
    player = models.CharField(max_length=64)  # the external id: the player may not exist yet
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["game", "player"], name="submissionrate_unique")]

    def __str__(self) -> str:
        return f"{self.player}: {self.count} since {self.window_start}"


class BoardStats(models.Model):
    """Recent result statistics of a board, refreshed by Celery beat; the synchronous rules
    read this one row instead of scanning results."""

    board = models.OneToOneField(Board, on_delete=models.CASCADE, related_name="anticheat_stats")
    top_value_part = models.BigIntegerField(null=True)  # the value part at the board's top percentile
    sample = models.PositiveIntegerField(default=0)
    # server keys whose results are statistically out of line with the other servers'
    outlier_keys = models.JSONField(default=list)
    refreshed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "board statistics"

    def __str__(self) -> str:
        return f"board {self.board_id}: top value part {self.top_value_part} of {self.sample}"


class ReviewMatch(Match):
    """The review queue: held matches and matches a rule flagged (open flags)."""

    class Meta:
        proxy = True
        verbose_name = "match to review"
        verbose_name_plural = "review queue"
        permissions = [("moderate_match", "Can approve and void matches")]


class GameModerator(models.Model):
    """A staff user who moderates a game (docs/moderation.md, "Moderators per game"): in the
    admin they see and act on that game's rows only. Superusers moderate every game and need
    no row here. Written by anticheat.services.moderator_grant and moderator_revoke."""

    game_path = "game"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="moderated_games")
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="moderators")
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "game moderator"
        constraints = [models.UniqueConstraint(fields=["user", "game"], name="gamemoderator_unique")]

    def __str__(self) -> str:
        return f"{self.user} moderates {self.game}"


class CheckBacklog(models.Model):
    """An applied match the after-the-fact checks have not run on yet (docs/moderation.md, "After
    the fact"). The projector writes it in the transaction that applies the match, and a drain
    deletes it in the transaction that checks the match: a crash anywhere leaves the match
    either waiting or checked, never lost, and Redis being down stops nothing but the wake-up."""

    match = models.OneToOneField(Match, on_delete=models.CASCADE, primary_key=True, related_name="+")

    def __str__(self) -> str:
        return f"match {self.match_id} awaits its checks"
