"""Writes of the durable store that are neither ingest (scores/ingest/), the projector
(scores/projection/) nor moderation (scores/recompute.py): server keys, configuration as code,
players' tokens (and their revocation) and friend lists."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard_project.errors import ApiError
from scores import encoding, pgarrays
from scores.auth import (
    RedisUnreachable,
    credential_store,
    make_player_token,
    player_token_generations_mirror,
    server_key_secret,
    server_keys_changed,
)
from scores.config import ConfigError, GameSpec
from scores.models import (
    Board,
    Friendship,
    Game,
    Player,
    PlayerTokenGeneration,
    PlayerValue,
    Region,
    Result,
    Season,
    ServerKey,
)
from scores.send import send_on_commit
from scores.signals import boards_resharded, friends_changed


def _players_upsert(game: Game, names: dict[str, str]) -> dict[str, int]:
    """Create missing players, set new display names; return {external_id: pk}.

    One statement: the rows it inserts or renames come from RETURNING, the others from a
    read in the same statement (its snapshot predates the insert). A player inserted by a
    concurrent request that committed after that snapshot is in neither: read again."""
    ids = sorted(names)
    id_list = pgarrays.texts(ids)
    with connection.cursor() as cur:
        # Existing players are only touched when a new display name arrives.
        cur.execute(
            """
            WITH written AS (
                INSERT INTO scores_player (game_id, external_id, display_name, created_at)
                SELECT %(game)s, u.external_id, u.display_name, now()
                FROM unnest(%(ids)s::text[], %(names)s::text[]) WITH ORDINALITY AS u(external_id, display_name, n)
                ORDER BY u.n
                ON CONFLICT (game_id, external_id) DO UPDATE SET display_name = EXCLUDED.display_name
                WHERE EXCLUDED.display_name <> '' AND scores_player.display_name <> EXCLUDED.display_name
                RETURNING external_id, id
            )
            SELECT external_id, id FROM written
            UNION ALL
            SELECT external_id, id FROM scores_player WHERE game_id = %(game)s AND external_id = ANY(%(ids)s::text[])
            """,
            {"game": game.id, "ids": id_list, "names": pgarrays.texts(names[p] for p in ids)},
        )
        found = dict(cur.fetchall())
        if len(found) < len(ids):
            cur.execute(
                "SELECT external_id, id FROM scores_player WHERE game_id = %s AND external_id = ANY(%s::text[])",
                [game.id, id_list],
            )
            found = dict(cur.fetchall())
        return found


# --- server keys -------------------------------------------------------------------------


def server_key_create(*, game: Game, name: str, scopes: Sequence[str] = ("submit",)) -> tuple[ServerKey, str]:
    """Create a key; return it with its secret, which is shown once and never stored."""
    unknown = set(scopes) - set(ServerKey.SCOPES)
    if unknown or not scopes:
        raise ValueError(f"unknown scopes {sorted(unknown)}; choose from {', '.join(ServerKey.SCOPES)}")
    key = ServerKey.objects.create(
        game=game,
        name=name,
        key_id="sk_" + secrets.token_hex(12),
        salt=secrets.token_hex(16),
        scopes=sorted(set(scopes)),
    )
    return key, server_key_secret(key.key_id, key.salt)


def server_key_revoke(*, key: ServerKey) -> ServerKey:
    """Revoke a key; the next request signed with it is refused."""
    if key.revoked_at is None:
        ServerKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        key.refresh_from_db(fields=["revoked_at"])
        server_keys_changed()  # processes caching keys read it again once this commits
    return key


# --- configuration as code ---------------------------------------------------------------


def _encoding_shape(b: Any) -> tuple:
    """The board fields the stored encoded scores depend on."""
    return (
        b.order,
        b.mode,
        b.min_score if (b.mode != "total" and b.order == "desc") else None,
        b.max_score if (b.mode != "total" and b.order == "asc") else None,
        encoding.value_span(b) if b.mode == "total" else None,
        encoding.min_total(b) if b.mode == "total" else None,
        tuple(encoding.subscores_json(encoding.subscores(b))),
    )


def game_config_apply(spec: GameSpec) -> list[str]:
    """Create or update a game, its boards and seasons from a parsed file.

    Returns a line per change (empty when the file changes nothing). Refuses, naming the key,
    a change that would invalidate the encoded scores a board already holds."""
    changes: list[str] = []
    resharded: list[int] = []
    with transaction.atomic():
        game_fields = {
            "name": spec.name,
            "reset_timezone": spec.reset_timezone,
            "close_grace_seconds": spec.close_grace_seconds,
            "retention_periods": spec.retention_periods,
            "allowed_origins": list(spec.allowed_origins),
            "webhooks": dict(spec.webhooks).get("hooks", []),
        }
        game, created = Game.objects.select_for_update().get_or_create(slug=spec.slug, defaults=game_fields)
        if created:
            changes.append(f"created game {spec.slug}")
        else:
            changes += _update_fields(game, game_fields, f"game {spec.slug}")
        existing = {b.slug: b for b in Board.objects.filter(game=game)}
        for i, bs in enumerate(spec.boards):
            fields = {
                "name": bs.name,
                "order": bs.order,
                "mode": bs.mode,
                "windows": list(bs.windows),
                "min_score": bs.min_score,
                "max_score": bs.max_score,
                "max_total": bs.max_total,
                "rank_display": bs.rank_display,
                "regions": bs.regions,
                "anticheat": dict(bs.anticheat),
                "format": bs.format,
                "shards": bs.shards,
                "exact_rank_limit": bs.exact_rank_limit,
                "min_total": bs.min_total,
                "tournament": dict(bs.tournament) if bs.tournament is not None else None,
                "rewards": dict(bs.rewards).get("tiers", []),
                "league": dict(bs.league) if bs.league is not None else None,
                "subscores": encoding.subscores_json(bs.subscores),
            }
            board = existing.get(bs.slug)
            if board is None:
                Board.objects.create(game=game, slug=bs.slug, **fields)
                changes.append(f"created board {bs.slug}")
                continue
            if _encoding_shape(board) != _encoding_shape(bs) and (
                PlayerValue.objects.filter(board=board).exists()
                # results store their sub-score digits (Result.subpart): held ones count too
                or (board.subscores != fields["subscores"] and Result.objects.filter(board=board).exists())
            ):
                raise ConfigError(
                    f"boards[{i}]",
                    f"board {bs.slug!r} already holds scores; changing its order, mode, score range or sub-scores "
                    "would change how they rank. Create a new board instead.",
                )
            was_shards = board.shards
            changes += _update_fields(board, fields, f"board {bs.slug}")
            if board.shards != was_shards:
                resharded.append(board.id)
        existing_regions = {r.slug: r for r in Region.objects.filter(game=game)}
        for rs in spec.regions:
            region = existing_regions.get(rs.slug)
            if region is None:
                Region.objects.create(game=game, slug=rs.slug, timezone=rs.timezone)
                changes.append(f"created region {rs.slug}")
            else:
                changes += _update_fields(region, {"timezone": rs.timezone}, f"region {rs.slug}")
        existing_seasons = {s.slug: s for s in Season.objects.filter(game=game)}
        for ss in spec.seasons:
            fields = {"name": ss.name, "starts_at": ss.starts_at, "ends_at": ss.ends_at}
            season = existing_seasons.get(ss.slug)
            if season is None:
                Season.objects.create(game=game, slug=ss.slug, **fields)
                changes.append(f"created season {ss.slug}")
            else:
                changes += _update_fields(season, fields, f"season {ss.slug}")
        if resharded:
            # re-sharding is a rebuild of those boards (boards/ listens)
            send_on_commit(boards_resharded, board_ids=resharded)
    return changes


def _update_fields(obj: Any, fields: dict[str, Any], label: str) -> list[str]:
    changed = [name for name, value in fields.items() if getattr(obj, name) != value]
    if not changed:
        return []
    for name in changed:
        setattr(obj, name, fields[name])
    obj.save(update_fields=changed)
    return [f"updated {label}: {', '.join(changed)}"]


# --- players: tokens and friends ---------------------------------------------------------

MAX_FRIENDS = 1000


def player_token_issue(*, player: Player) -> tuple[str, datetime]:
    """A bearer token with which the game client reads as this player (docs/api.md §3.2), of
    the player's current token generation (a revocation committed before this read is not
    undone by it; one committing meanwhile refuses the new token too, the safe side)."""
    expires_at = timezone.now() + timedelta(seconds=settings.PLAYER_TOKEN_TTL_SECONDS)
    generation = (
        PlayerTokenGeneration.objects.filter(player_id=player.pk).values_list("generation", flat=True).first() or 0
    )
    # a player's own read's board script then finds the generation from the token's first read on
    player_token_generations_mirror({player.pk: generation})
    token = make_player_token(player.game_id, player.pk, expires_at, player.external_id, generation)
    return token, expires_at


def player_tokens_revoke(*, player: Player) -> int:
    """Revoke every bearer token made for this player so far (docs/api.md §3.2): the next
    request with one of them is refused, on every path, in every process. Returns the new
    generation; tokens made from now on carry it.

    One upsert adds one to the generation (no read-then-write: two revocations at once make
    two generations). Redis' mirror is written inside the transaction, while the upsert holds
    the row: mirrors are written in generation order, and a revocation Redis did not take is
    rolled back (503) rather than committed unseen by the readers. A commit failing after the
    mirror was written leaves the mirror one ahead: the player's tokens are refused until the
    next revocation or the mirror's expiry, the safe side."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO scores_playertokengeneration (player_id, generation, revoked_at)
            VALUES (%s, 1, now())
            ON CONFLICT (player_id) DO UPDATE
                SET generation = scores_playertokengeneration.generation + 1, revoked_at = now()
            RETURNING generation
            """,
            [player.pk],
        )
        generation = cur.fetchone()[0]
        if not credential_store().generation_set(player.pk, generation, settings.PLAYER_TOKEN_TTL_SECONDS):
            raise RedisUnreachable("cannot revoke now: Redis is unreachable; nothing changed, retry")
    return generation


def friends_replace(*, game: Game, player_id: str, friends: Sequence[str]) -> list[str]:
    """Replace a player's friend list. Friendship is mutual: dropping B from A's list also
    drops A from B's. Friends who have not played yet are created as players."""
    wanted = sorted(set(friends))
    if player_id in wanted:
        raise ApiError("a player cannot be their own friend", code="invalid_body")
    if len(wanted) > MAX_FRIENDS:
        raise ApiError(f"at most {MAX_FRIENDS} friends", code="invalid_body")
    with transaction.atomic():
        ids = _players_upsert(game, {p: "" for p in [player_id, *wanted]})
        me = ids[player_id]
        Player.objects.select_for_update().filter(pk=me).first()  # one replace per player at a time
        new = {ids[f] for f in wanted}
        old = set(Friendship.objects.filter(player_id=me).values_list("friend_id", flat=True))
        removed, added = old - new, new - old
        if removed:
            Friendship.objects.filter(
                Q(player_id=me, friend_id__in=removed) | Q(player_id__in=removed, friend_id=me)
            ).delete()
        if added:
            Friendship.objects.bulk_create(
                [Friendship(player_id=me, friend_id=f) for f in sorted(added)]
                + [Friendship(player_id=f, friend_id=me) for f in sorted(added)],
                ignore_conflicts=True,
            )
        touched = sorted({me, *removed, *added})
        if removed or added:
            send_on_commit(friends_changed, sender=Friendship, player_ids=touched)
    return wanted
