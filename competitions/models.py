"""Tournaments' own tables (docs/competitions.md). A tournament is a board whose
`tournament` settings are set (scores.Board); these rows say who joined and how many of
their results counted. Every count is decided by a conditional write, never a prior read."""

from __future__ import annotations

from django.db import models

from scores.models import Board, Game, Player, Season


class TournamentSize(models.Model):
    """How many players joined a tournament: the one row a join's conditional UPDATE
    (`size < max_size`) increments, so concurrent joins never pass max_size."""

    board = models.OneToOneField(Board, on_delete=models.CASCADE, primary_key=True, related_name="+")
    size = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.board_id}: {self.size} joined"


class TournamentEntry(models.Model):
    """A player who joined; the unique constraint makes joining twice harmless."""

    game_path = "board__game"  # the admin's per-game scoping (scores/scoping.py)

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


class WebhookSecret(models.Model):
    """A game's webhook signing secret is never stored: it is derived from SERVER_KEY_PEPPER and
    this salt (competitions/webhooks.py), as server keys' are (docs/architecture.md)."""

    game = models.OneToOneField(Game, on_delete=models.CASCADE, primary_key=True, related_name="+")
    salt = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"webhook secret of {self.game_id}"


class WebhookEvent(models.Model):
    """The outbox: one row per settlement event, written in the transaction of the freeze that
    caused it (seasons.services.window_freeze calls competitions through its freeze hook).
    `body` is the exact JSON sent, so every attempt signs the same bytes."""

    game_path = "game"

    id = models.UUIDField(primary_key=True)  # X-Event-Id
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="+")
    # none for a match decision pulled from the events feed (webhooks_feed_pull): about no board
    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    window = models.CharField(max_length=80)
    version = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.type} {self.window} v{self.version}"


class WebhookDelivery(models.Model):
    """One event to one URL. Delivered in id order per (url, board, window): a later delivery
    waits while an earlier one of its board window is still pending (the events pulled from the
    feed about no board: in id order per url and game)."""

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # gave up (24 h of retries); the admin can redeliver

    game_path = "event__game"

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    url = models.CharField(max_length=2000)
    # the event's: the order's key (none: a match decision, ordered per url within its game)
    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    window = models.CharField(max_length=80)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    give_up_at = models.DateTimeField()
    last_status = models.PositiveIntegerField(null=True, blank=True)
    last_response = models.TextField(blank=True, default="")  # status, or the error, and the body's start
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # the attempt in flight (competitions/webhooks.py, docs/competitions.md "Delivery"): written
    # with its lease, and its outcome is written only while this still names it
    claim = models.UUIDField(null=True, blank=True, editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["next_attempt_at"], name="webhook_delivery_due", condition=models.Q(state="pending")),
            models.Index(fields=["url", "board", "window", "id"], name="webhook_delivery_order"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} -> {self.url}: {self.state}"


class LeagueGroup(models.Model):
    """One group of a league's tier in a season. `size` is the members placed in it: the
    placement's conditional UPDATE (`size < league size`) is the only writer."""

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="+")
    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="+")
    tier = models.PositiveSmallIntegerField()  # index into the league's tiers, 0 the lowest
    size = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["board", "season", "tier", "id"], name="league_group_open")]

    def __str__(self) -> str:
        return f"group {self.pk} (tier {self.tier})"


class LeagueMember(models.Model):
    """A player's place in a season of a league: the unique constraint places them once."""

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="+")
    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="+")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")
    tier = models.PositiveSmallIntegerField()
    group = models.ForeignKey(LeagueGroup, on_delete=models.CASCADE, null=True, related_name="members")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["board", "season", "player"], name="league_member_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.player_id} in group {self.group_id}"


class LeagueOutcome(models.Model):
    """The tier a player plays in after a season, from that season's frozen group standings
    (rewritten by each re-freeze)."""

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="+")
    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="+")
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")
    tier_next = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["board", "season", "player"], name="league_outcome_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.player_id} after {self.season_id}: tier {self.tier_next}"


class LeagueGroupFreeze(models.Model):
    """One version of a league group's frozen standings (docs/competitions.md, "Leagues"): cut
    from a version of the season's frozen standings (`season_freeze`), in the season freeze's
    transaction. A re-freeze of the season writes a group's next version only when the group's
    standings changed. Versions are never changed or deleted."""

    group = models.ForeignKey(LeagueGroup, on_delete=models.CASCADE, related_name="freezes")
    version = models.PositiveIntegerField()
    season_freeze = models.ForeignKey("seasons.WindowFreeze", on_delete=models.PROTECT, related_name="+")
    frozen_at = models.DateTimeField(auto_now_add=True)
    entries = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["group", "version"], name="league_group_freeze_unique")]

    def __str__(self) -> str:
        return f"group {self.group_id} v{self.version}"


class LeagueGroupStanding(models.Model):
    """A member's place in a frozen group version, and the tier it gives them next season. The
    fields a frozen standing has (seasons.FrozenStanding), so the standings read serves both."""

    freeze = models.ForeignKey(LeagueGroupFreeze, on_delete=models.CASCADE, related_name="standings")
    position = models.PositiveIntegerField()  # 1-based within the group, the season's order
    rank = models.PositiveIntegerField()  # as displayed: shared within the group on shared boards
    player = models.ForeignKey(Player, on_delete=models.PROTECT, related_name="+")
    value = models.BigIntegerField()
    reached_at = models.DateTimeField()
    # the season standing's sort key (docs/encoding.md): the frozen value's sub-scores are decoded from it
    encoded = models.BigIntegerField()
    tier_next = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["freeze", "position"], name="league_group_standing_position"),
        ]

    def __str__(self) -> str:
        return f"#{self.rank} {self.player_id}"


class FeedCursor(models.Model):
    """How far competitions/' webhook pull has read a game's events feed (webhooks_feed_pull):
    the events after it have no deliveries yet. Moved in the transaction that writes them."""

    game = models.OneToOneField(Game, on_delete=models.CASCADE, primary_key=True, related_name="+")
    pos = models.BigIntegerField()
    idx = models.IntegerField()

    def __str__(self) -> str:
        return f"feed of {self.game_id} read to {self.pos}-{self.idx}"
