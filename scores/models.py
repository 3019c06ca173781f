"""The durable truth: games and their configuration, players, matches, results and the
per-board, per-window value of every player. Redis is derived from these tables."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import RegexValidator
from django.db import models

from scores.ids import PLAYER_RE, SLUG_RE  # noqa: F401  (PLAYER_RE: re-exported for older imports)

# The id of the Postgres transaction a row is written in: rows written together share it
# (anticheat.AuditEntry and seasons.WindowFreeze use it as their column default).
TXID = models.Func(function="txid_current", output_field=models.BigIntegerField())
slug_validator = RegexValidator(SLUG_RE, "Use 1-64 characters: a-z, 0-9 and '-', starting with a letter or digit.")


class Game(models.Model):
    # how a row reaches its game, for the admin's per-game scoping (scores/scoping.py)
    game_path = ""

    slug = models.CharField(max_length=64, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    reset_timezone = models.CharField(max_length=64, default="UTC")
    # A window's standings are frozen this long after it ends (late results still count).
    close_grace_seconds = models.PositiveIntegerField(default=300)
    # A closed window's sorted set stays readable this many periods after it ends.
    retention_periods = models.PositiveIntegerField(default=1)
    # origins of the browser game clients that may read with a player token and open the
    # websocket (docs/clients.md); normalised "scheme://host[:port]"
    allowed_origins = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    # settlement webhooks: [{"url", "events"}] (docs/competitions.md); their secret is competitions'
    webhooks = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.slug


class Board(models.Model):
    game_path = "game"

    class Order(models.TextChoices):
        DESC = "desc", "Higher is better"
        ASC = "asc", "Lower is better"

    class Mode(models.TextChoices):
        BEST = "best", "Best result per window"
        TOTAL = "total", "Sum of results per window"
        LATEST = "latest", "Most recent result per window"

    class RankDisplay(models.TextChoices):
        UNIQUE = "unique", "Unique (1,2,3,4)"
        SHARED = "shared", "Shared (1,2,2,4)"

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="boards")
    slug = models.CharField(max_length=64, validators=[slug_validator])
    name = models.CharField(max_length=200)
    order = models.CharField(max_length=4, choices=Order.choices, default=Order.DESC)
    mode = models.CharField(max_length=6, choices=Mode.choices, default=Mode.BEST)
    windows = ArrayField(models.CharField(max_length=16), default=list)
    min_score = models.BigIntegerField(default=0)
    max_score = models.BigIntegerField()
    # Only for total boards: the largest total the ranking distinguishes (see docs/encoding.md).
    max_total = models.BigIntegerField(null=True, blank=True)
    # Only for total boards with min_score < 0: the floor a total is clamped at (None: 0)
    min_total = models.BigIntegerField(null=True, blank=True)
    rank_display = models.CharField(max_length=6, choices=RankDisplay.choices, default=RankDisplay.UNIQUE)
    # also keep one board per region of the game, each rolling over at its region's midnight
    regions = models.BooleanField(default=False)
    # anti-cheat thresholds overriding the defaults of anticheat/rules.py (docs/moderation.md)
    anticheat = models.JSONField(default=dict, blank=True)
    # how the pages show a score (scores/formats.py); the API always answers integers
    format = models.CharField(max_length=16, default="integer")
    # how many sorted sets each board window is spread over (a Redis Cluster spreads them), and
    # how deep ranks on such a board stay exact (docs/reads.md, "Sharded boards")
    shards = models.PositiveSmallIntegerField(default=1)
    exact_rank_limit = models.PositiveIntegerField(default=10_000)
    # a tournament board's settings (docs/competitions.md); null for every other board
    tournament = models.JSONField(null=True, blank=True)
    # settlement reward tiers by frozen rank (docs/competitions.md)
    rewards = models.JSONField(default=list, blank=True)
    # a league board's tiers, group size, promotion and relegation (docs/competitions.md), else null
    league = models.JSONField(null=True, blank=True)
    # declared sub-scores [{"name", "order", "min", "max"}], ranked after the score in this order
    # (docs/encoding.md, "Sub-scores"); part of the encoding, like order and the bounds
    subscores = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["game", "slug"], name="board_unique_slug_per_game")]

    def __str__(self) -> str:
        return f"{self.game.slug}/{self.slug}"  # admins select_related("game")


class Season(models.Model):
    game_path = "game"

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="seasons")
    slug = models.CharField(max_length=64, validators=[slug_validator])
    name = models.CharField(max_length=200)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["game", "slug"], name="season_unique_slug_per_game"),
            models.CheckConstraint(
                condition=models.Q(ends_at__gt=models.F("starts_at")), name="season_ends_after_start"
            ),
        ]

    def __str__(self) -> str:
        return self.slug


class Region(models.Model):
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="regions")
    slug = models.CharField(max_length=64, validators=[slug_validator])
    timezone = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["game", "slug"], name="region_unique_slug_per_game")]

    def __str__(self) -> str:
        return self.slug


class Player(models.Model):
    """A game's player. The integer primary key is the sorted-set member: compact in Redis.

    The player pages search display names by prefix through the index player_name_prefix on
    (game_id, lower(display_name) text_pattern_ops), made in migration 0009 with SQL (Django
    cannot spell an operator class on an expression next to a plain column)."""

    game_path = "game"

    # db_index=False: the unique (game, external_id) index already leads with game
    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="players", db_index=False)
    external_id = models.CharField(max_length=64)
    display_name = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["game", "external_id"], name="player_unique_id_per_game")]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.external_id})" if self.display_name else self.external_id


class ServerKey(models.Model):
    """A game server's signing key. The secret is derived from the key id, a random salt and
    a pepper held only in the environment, so the table alone cannot sign anything."""

    SCOPES = ("submit", "moderate", "events")
    game_path = "game"

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="server_keys")
    name = models.CharField(max_length=100)
    key_id = models.CharField(max_length=40, unique=True)
    salt = models.CharField(max_length=64)
    scopes = ArrayField(models.CharField(max_length=16), default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.key_id})"


# Scored data (matches, results, values, frozen standings) is never deleted by a cascade: the
# references to it PROTECT, so deleting a game, board or player that has any is refused. A
# match stops counting by being voided; a player leaves through an erasure that voids their
# matches (anticheat.services.player_erase), so boards and frozen history stay consistent.


class Match(models.Model):
    class Status(models.TextChoices):
        ACCEPTED = "accepted"
        HELD = "held"
        VOIDED = "voided"

    game_path = "game"

    # db_index=False: the unique (game, match_id) index already leads with game
    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="matches", db_index=False)
    match_id = models.CharField(max_length=128)
    ended_at = models.DateTimeField()
    # sha256 of the canonical match body: the same match_id with another body is a conflict.
    body_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACCEPTED)
    server_key = models.ForeignKey(ServerKey, null=True, blank=True, on_delete=models.SET_NULL)
    # Stamped by the ingest statement under the game's shared ingest lock (scores/ingest/), so a
    # window's cutoff (WindowCutoff) divides matches exactly into received before and after it.
    received_at = models.DateTimeField(auto_now_add=True)
    # When the match began to count, if not on arrival (NULL: from received_at). A match held on
    # arrival gets its approval time; one held after the fact had counted since arrival and
    # gets received_at when it is held, so its approval changes nothing. See WindowCutoff.
    counts_from = models.DateTimeField(null=True, blank=True)
    # Set when a person (a moderator, or a server key with the moderate scope) approved or
    # voided the match: from then on no automatic check holds or flags it again, the holds
    # being conditional on decided_at IS NULL (docs/moderation.md, "Moderators have the last word").
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=150, blank=True, db_default="")  # the audit log's actor label

    class Meta:
        verbose_name_plural = "matches"
        constraints = [models.UniqueConstraint(fields=["game", "match_id"], name="match_unique_id_per_game")]

    def __str__(self) -> str:
        return self.match_id


class Result(models.Model):
    """One player's result in a match: the durable record every value is derived from.

    The table is partitioned by `ended_at` (the match's) with Postgres' native range
    partitioning: one partition per UTC day, made ahead of time (scores.partitions), and a
    default partition for whatever falls outside them. Its real primary key is (id, ended_at),
    as partitioning requires; `id` alone is unique (one sequence), which is all Django needs.
    Migration 0011 creates it with SQL.

    The ingest statement writes matches and results together from the same rows, so the
    references are not checked by Postgres (db_constraint=False): three deferred checks per
    result were a measurable share of a batch. The ORM still refuses to delete what they
    reference (PROTECT): scored data goes only through a void or a player's erasure."""

    game_path = "match__game"

    match = models.ForeignKey(Match, on_delete=models.PROTECT, related_name="results", db_constraint=False)
    # db_index=False: the (player, board) index already leads with player
    player = models.ForeignKey(
        Player, on_delete=models.PROTECT, related_name="results", db_index=False, db_constraint=False
    )
    # db_index=False: nothing looks results up by board alone (statistics scan recent partitions)
    board = models.ForeignKey(
        Board, on_delete=models.PROTECT, related_name="results", db_index=False, db_constraint=False
    )
    score = models.BigIntegerField()
    # the result's sub-scores as one number of the board's mixed radix (scores.encoding.subpart:
    # each declared sub-score's digit, a missing one 0, its worst); 0 on boards without any. The
    # projector ranks by score_part * subradix + subpart without reading the board's JSON per row.
    subpart = models.BigIntegerField(db_default=0)
    metadata = models.JSONField(null=True, blank=True)
    # the display name sent with the result: the projector applies it to the player
    display_name = models.CharField(max_length=64, null=True, blank=True)
    # the match's ended_at, copied: the partition key, and what windows are derived from
    ended_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["player", "board"], name="result_player_board")]  # the player page's results

    def __str__(self) -> str:
        return f"{self.player} on {self.board.slug}: {self.score}"


class PlayerValue(models.Model):
    """A player's value on one board in one explicit window ("all", "daily:2026-11-29"...).

    `encoded` is the sorted-set score (value and tie-break in one integer below 2**53); the
    ingest path upserts it with GREATEST, so a late or repeated result cannot lower it.

    A value is derived from the player's results (values_recompute rebuilds it from them), so
    its references are not checked by Postgres (db_constraint=False): ingest writes five of
    these rows per result, and the deferred foreign-key checks cost a fifth of the database's
    time per batch (docs/BENCHMARKS.md). The ids come from rows the same transaction wrote or
    read. Deleting a board or player that holds values is refused (PROTECT, enforced by the ORM):
    scored data leaves only through a void (anticheat.services.player_erase for a player)."""

    # db_index=False on both: the unique (player, board, window) index leads with player, and
    # the rank index with (board, window). Three indexes, not four: each costs every value row
    # the projector writes (~11 µs a row in all, measured with EXPLAIN ANALYZE of a fold).
    board = models.ForeignKey(
        Board, on_delete=models.PROTECT, related_name="values", db_index=False, db_constraint=False
    )
    window = models.CharField(max_length=80)
    player = models.ForeignKey(
        Player, on_delete=models.PROTECT, related_name="values", db_index=False, db_constraint=False
    )
    value = models.BigIntegerField()
    reached_at = models.DateTimeField()
    encoded = models.BigIntegerField()
    metadata = models.JSONField(null=True, blank=True)
    # ended_at of the latest result that counted: whose metadata a total board shows
    latest_at = models.DateTimeField()
    # latest boards (and totals that may fall): the match_id of that latest result, the
    # tie-break between results of the same ended_at (docs/encoding.md, "Values that fall")
    latest_match = models.CharField(max_length=128, null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["player", "board", "window"], name="playervalue_player_board_window"),
        ]
        indexes = [
            models.Index(fields=["board", "window", "-encoded", "player"], name="playervalue_rank_order"),
        ]

    def __str__(self) -> str:
        return f"{self.player} on {self.board.slug} {self.window}: {self.value}"


class BoardOutbox(models.Model):
    """Values committed to Postgres that still have to reach the sorted sets.

    Written in the transaction that changed the values (a projector batch, a moderation
    recompute: scores/outbox.py); after commit boards/ marks the row applied once Redis has the
    values, and a periodic drain deletes applied rows and replays the others (Redis down, a
    crash)."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # [[board_id, window, [player_id, ...]], ...]: one item per board window (a 1000-result
    # batch writes 5 items, not 5000). Rows written before that hold [board_id, window,
    # player_id] items; scores.outbox.outbox_refs() reads both.
    entries = models.JSONField()
    # a moderation rewrite (void, hold): replayed with absolute writes, not ZADD GT, so it can
    # lower or remove entries; the drain replays it even when the fast path applied it
    rewrite = models.BooleanField(default=False)

    def __str__(self) -> str:
        count = sum(len(e[2]) if isinstance(e[2], list) else 1 for e in self.entries)
        return f"outbox {self.pk} ({count} values)"


class Friendship(models.Model):
    """One direction of a mutual friendship; both directions are always stored."""

    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="friendships")
    friend = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["player", "friend"], name="friendship_unique"),
            models.CheckConstraint(condition=~models.Q(player=models.F("friend")), name="friendship_not_self"),
        ]

    def __str__(self) -> str:
        return f"{self.player_id} ~ {self.friend_id}"


class PlayerRegion(models.Model):
    """The region a player plays in during a season (season NULL: outside any season).
    Set by the first result that names it; it cannot change within the season."""

    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="regions")
    season = models.ForeignKey(Season, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    region = models.ForeignKey(Region, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["player", "season"], name="playerregion_one_per_season", nulls_distinct=False
            )
        ]

    def __str__(self) -> str:
        return f"{self.player_id} in {self.region_id} ({self.season_id})"


class PlayerAccount(models.Model):
    """A site login (Django user) that plays as one player of a game: the player pages and the
    websocket read as this player when the session belongs to the user. One player per user per
    game, one user per player. Made by the demo data or by redeeming a game's one-time login link."""

    game_path = "game"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="player_accounts")
    # Denormalised from player.game so the one-per-game rule is a plain unique constraint.
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="+")
    player = models.OneToOneField(Player, on_delete=models.CASCADE, related_name="account")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "game"], name="playeraccount_one_per_game")]

    def __str__(self) -> str:
        return f"{self.user_id} plays {self.player_id}"


class LoginLinkUse(models.Model):
    """A redeemed one-time login link (scores/accounts.py). The link itself is a signed token
    and is not stored; its nonce is inserted here on redemption, and the primary key makes a
    second redemption fail in the database rather than in a read-then-write check."""

    nonce = models.UUIDField(primary_key=True)
    player = models.ForeignKey(Player, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    redeemed_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.nonce} -> {self.user_id}"


class PlayerTokenGeneration(models.Model):
    """A player's bearer-token generation (docs/api.md §3.2, "Revoking"): a token carries the
    generation current when it was made, and one older than this row's is refused. No row:
    generation 0, nothing revoked yet. Revoking adds one in a single upsert; Redis mirrors the
    number per player for the hot reads (rediskit/keys.py player_tokens_key)."""

    player = models.OneToOneField(Player, on_delete=models.CASCADE, primary_key=True, related_name="+")
    generation = models.PositiveIntegerField()
    revoked_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.player_id}: generation {self.generation}"


class Pending(models.Model):
    """Matches committed by ingest that the projector has not applied yet (scores/projection).

    The ingest statement inserts one row per projector lane its results touch (lane = player pk
    modulo scores.locks.LANES) in the same transaction as the matches; the projector deletes
    rows in the transaction that writes their values, so a value is written exactly once however
    the projector stops. Held matches are listed too and skipped (only accepted ones count)."""

    lane = models.SmallIntegerField()
    match_pks = ArrayField(models.BigIntegerField())
    # bounds of the matches' ended_at: the projector's read of their results touches only the
    # partitions of scores_result that can hold them
    ended_from = models.DateTimeField()
    ended_to = models.DateTimeField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["lane", "id"], name="pending_lane_id")]  # claims: oldest first

    def __str__(self) -> str:
        return f"pending {self.pk} (lane {self.lane}, {len(self.match_pks)} matches)"


class ProjectorPace(models.Model):
    """How long each running projector takes per match it applies, from claiming a batch to its
    Redis mirror, smoothed over its recent large batches (scores/projection/runner.py writes it,
    scores/admission.py reads it to tell how long what waits will take to become visible)."""

    name = models.CharField(max_length=200, primary_key=True)  # host:pid of the projector process
    seconds_per_match = models.FloatField()
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name}: {self.seconds_per_match * 1000:.3f} ms per match"


class WindowCutoff(models.Model):
    """The moment a board window stopped taking results: set once, when its standings are first
    frozen (seasons/), under the game's exclusive ingest lock. A match counts in the window only
    if it began to count (received_at, or counts_from) before `cut_at`; the projector and the
    moderation recompute apply the same rule, so values, recomputes and frozen standings agree."""

    board = models.ForeignKey(Board, on_delete=models.CASCADE, related_name="cutoffs")
    window = models.CharField(max_length=80)
    cut_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["board", "window"], name="windowcutoff_unique")]

    def __str__(self) -> str:
        return f"{self.board_id} {self.window} cut at {self.cut_at:%Y-%m-%d %H:%M:%S}"


class EventDraft(models.Model):
    """Events a transaction has written and not yet published: the trigger of migration 0026
    moves them into the feed at COMMIT (scores/events.py). Never seen outside its transaction."""

    game_id = models.BigIntegerField()
    events = models.TextField()  # one JSON object a line
    count = models.IntegerField()
    pushed = models.BooleanField(default=False)  # holds a type of scores.events.PUSHED

    def __str__(self) -> str:
        return f"draft {self.pk} ({self.count} events)"


class Event(models.Model):
    """A chunk of the events feed (docs/api.md §13.1): up to 1000 events of one game, published
    by one transaction at position `pos`. Partitioned by the day of `at` (migration 0026), the
    unit retention drops; event i of the chunk has the cursor "<pos>-<i>"."""

    pos = models.BigIntegerField(primary_key=True)
    game_id = models.BigIntegerField()
    at = models.DateTimeField()
    count = models.IntegerField()
    events = models.TextField()  # one JSON object a line, {"type", "at", "data"}
    # holds a type of scores.events.PUSHED: read by competitions/' webhook pull (migration 0027)
    pushed = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"events {self.pos}-0..{self.count - 1}"


class EventFloor(models.Model):
    """The last event retention dropped (one row, id 1; none before the first drop): a cursor
    before it is expired (410 cursor_expired)."""

    id = models.SmallIntegerField(primary_key=True)
    pos = models.BigIntegerField()
    idx = models.IntegerField()

    def __str__(self) -> str:
        return f"events floor {self.pos}-{self.idx}"
