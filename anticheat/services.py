"""Moderation writes (docs/api.md §8): void, approve, hold and flag, bulk voids (by player,
by server key), erasing a player, key revocation, who moderates which game. The admin, the API and the Celery checks
all go through these; each writes its audit entries in its own transaction (the statistics
the rules compare against are anticheat/after.py's).

Void-and-rewrite: the match's status changes with a conditional UPDATE, each affected player's
value per board and window is recomputed in SQL from their remaining accepted matches
(scores.recompute.values_recompute), frozen windows are frozen again, and after commit boards/
rewrites the entries with absolute writes (lowered, or removed where nothing remains)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import transaction
from django.utils import timezone

from anticheat.models import AuditEntry, GameModerator, MatchFlag
from anticheat.rules import Verdict
from leaderboard_project.errors import Conflict, NotFound
from scores import events, recompute
from scores import services as scores_services
from scores.models import Game, Match, Player, PlayerAccount, ServerKey
from scores.selectors import game_config
from seasons.services import standings_refreeze

log = logging.getLogger(__name__)


class MatchNotFound(NotFound):
    code = "unknown_match"  # no match with this id in the game


class MatchVoided(Conflict):
    code = "match_voided"  # approving a voided match: a void is final


@dataclass(frozen=True)
class Actor:
    """Who acts: a staff user (admin), a server key (API) or the rules (Celery)."""

    label: str  # as the audit log shows it
    user: AbstractBaseUser | None = None
    key: ServerKey | None = None

    @classmethod
    def of_user(cls, user: AbstractBaseUser) -> Actor:
        return cls(f"user {user.get_username()}", user=user)

    @classmethod
    def of_key(cls, key: ServerKey) -> Actor:
        return cls(f"server key {key.key_id} ({key.name})", key=key)

    @classmethod
    def rules(cls, rule: str) -> Actor:
        return cls(f"anti-cheat rule {rule}")


def _audit(actor: Actor, action: str, game_id: int, reason: str, **fields: object) -> AuditEntry:
    return AuditEntry(
        action=action,
        actor=actor.label[:150],
        actor_user=actor.user,
        actor_key=actor.key,
        game_id=game_id,
        reason=reason,
        **fields,
    )


def match_get(*, game: Game, match_id: str) -> Match:
    match = Match.objects.filter(game=game, match_id=match_id).first()
    if match is None:
        raise MatchNotFound(f"unknown match {match_id!r}")
    return match


def _events_draft(game_id: int, kind: str, match_ids: Sequence[str], *, reason: str = "") -> None:
    """The feed's word of a decision on matches (scores/events.py): the moderator's reason,
    where one was given, travels with it."""
    at = events.event_at()
    extra = {"reason": reason} if reason else {}
    events.events_draft(
        game_id=game_id, events=[events.event(kind, {"match_id": m, **extra}, at=at) for m in match_ids]
    )


def _flags_resolve(match_pks: Sequence[int]) -> None:
    MatchFlag.objects.filter(match_id__in=match_pks, resolved_at__isnull=True).update(resolved_at=timezone.now())


def _recompute(game: Game, match_pks: Sequence[int], reason: str, *, refreeze: bool) -> list[recompute.Ref]:
    """Recompute every value these matches counted in; with refreeze, freeze affected frozen
    windows again (a void), else leave frozen windows alone (a hold: the value comes back on
    approval, and frozen standings are only ever changed by a void)."""
    if not match_pks:
        return []
    config = game_config(game)
    refs = recompute.matches_refs(config, match_pks=match_pks)
    frozen = recompute.frozen_of(refs)
    if not refreeze:
        refs = {ref for ref in refs if (ref[0], ref[1]) not in frozen}
    touched = recompute.values_recompute(config, refs=refs, reason=reason)
    if refreeze and frozen:
        by_board: dict[int, list[str]] = defaultdict(list)
        for board_id, window in sorted(frozen):
            by_board[board_id].append(window)
        boards = {b.id: b for b in config.boards.values()}
        for board_id, windows in by_board.items():
            standings_refreeze(board=boards[board_id], windows_=windows, reason=reason[:300])
    return touched


def matches_void(
    *, game: Game, match_pks: Sequence[int], reason: str, actor: Actor, bulk: dict | None = None
) -> list[int]:
    """Void matches (accepted or held): they stop counting everywhere. Returns the pks that
    were voided now; voiding a voided match again changes nothing."""
    if not reason.strip():
        raise ValueError("a reason is required")
    with transaction.atomic():
        moved = recompute.matches_status_set(
            match_pks,
            to=Match.Status.VOIDED,
            allowed=[Match.Status.ACCEPTED, Match.Status.HELD],
            decided_by=actor.label,
        )
        pks = [pk for pk, _ in moved]
        counted = [pk for pk, before in moved if before == Match.Status.ACCEPTED]
        ids = dict(Match.objects.filter(pk__in=pks).values_list("pk", "match_id"))
        _events_draft(game.id, events.MATCH_VOIDED, [ids[pk] for pk in pks], reason=reason)
        touched = _recompute(game, counted, f"void: {reason}", refreeze=True)
        _flags_resolve(pks)
        entries = [
            _audit(
                actor,
                AuditEntry.Action.VOID,
                game.id,
                reason,
                match_id=pk,
                match_ref=ids[pk],
                details={"previous_status": before, **({"bulk": bulk} if bulk else {})},
            )
            for pk, before in moved
        ]
        if bulk is not None:
            entries.append(
                _audit(actor, AuditEntry.Action.VOID_BULK, game.id, reason, details={**bulk, "voided": len(pks)})
            )
        AuditEntry.objects.bulk_create(entries)
    log.info("%s voided %d match(es), %d value(s) recomputed: %s", actor.label, len(pks), len(touched), reason)
    return pks


def match_void(*, match: Match, reason: str, actor: Actor) -> Match:
    matches_void(game=match.game, match_pks=[match.pk], reason=reason, actor=actor)
    match.refresh_from_db(fields=["status"])
    return match


def matches_void_by_player(*, player: Player, since: datetime, until: datetime, reason: str, actor: Actor) -> list[int]:
    """Void every match of a player that ended in [since, until)."""
    pks = list(
        Match.objects.filter(results__player=player, ended_at__gte=since, ended_at__lt=until)
        .exclude(status=Match.Status.VOIDED)
        .values_list("pk", flat=True)
        .distinct()
    )
    bulk = {"player": player.external_id, "since": since.isoformat(), "until": until.isoformat()}
    with transaction.atomic():
        voided = matches_void(game=player.game, match_pks=pks, reason=reason, actor=actor, bulk=bulk)
    return voided


def player_erase(*, player: Player, reason: str, actor: Actor) -> list[int]:
    """Remove a player from the boards and history the only way scored data leaves: every
    match they played in is voided through the normal void path (values recomputed, board
    entries rewritten, frozen windows frozen again as a new version, each void audited), then
    their display name is cleared, their friendships dropped and their site login unlinked.
    The player row stays (the audit log and earlier frozen versions name it), deletion being
    refused for any player with scored data. Returns the pks of the matches voided."""
    if not reason.strip():
        raise ValueError("a reason is required")
    with transaction.atomic():
        pks = list(
            Match.objects.filter(results__player=player)
            .exclude(status=Match.Status.VOIDED)
            .values_list("pk", flat=True)
            .distinct()
        )
        bulk = {"erase_player": player.external_id}
        voided = matches_void(
            game=player.game, match_pks=pks, reason=f"player erased: {reason}", actor=actor, bulk=bulk
        )
        scores_services.friends_replace(game=player.game, player_id=player.external_id, friends=[])
        Player.objects.filter(pk=player.pk).update(display_name="")
        PlayerAccount.objects.filter(player=player).delete()
        _audit(
            actor,
            AuditEntry.Action.ERASE_PLAYER,
            player.game_id,
            reason,
            player=player,
            details={"voided": len(voided)},
        ).save()
    log.info("%s erased player %s (%d match(es) voided): %s", actor.label, player.external_id, len(voided), reason)
    return voided


def matches_void_by_server_key(
    *, key: ServerKey, since: datetime, until: datetime, reason: str, actor: Actor
) -> list[int]:
    """Void every match a server key submitted that ended in [since, until)."""
    pks = list(
        Match.objects.filter(server_key=key, ended_at__gte=since, ended_at__lt=until)
        .exclude(status=Match.Status.VOIDED)
        .values_list("pk", flat=True)
    )
    bulk = {"server_key": key.key_id, "since": since.isoformat(), "until": until.isoformat()}
    return matches_void(game=key.game, match_pks=pks, reason=reason, actor=actor, bulk=bulk)


def match_approve(*, match: Match, actor: Actor, reason: str = "") -> Match:
    """Apply a held match exactly as ingest would have, and clear its flags. Approving an
    accepted match only clears its flags (it counts already: nothing is applied twice); a
    voided one is a conflict (409). Either way the match is the approver's decision from now
    on: no automatic check holds it again (docs/moderation.md, "Moderators have the last word")."""
    with transaction.atomic():
        moved = recompute.matches_status_set(
            [match.pk],
            to=Match.Status.ACCEPTED,
            allowed=[Match.Status.HELD, Match.Status.ACCEPTED],
            decided_by=actor.label,
        )
        if not moved:
            raise MatchVoided(f"match {match.match_id!r} was voided; a voided match cannot be approved")
        previous = moved[0][1]
        if previous == Match.Status.HELD:
            _events_draft(match.game_id, events.MATCH_APPROVED, [match.match_id], reason=reason)
            recompute.matches_count(game_config(match.game), match_pks=[match.pk])
        _flags_resolve([match.pk])
        _audit(
            actor,
            AuditEntry.Action.APPROVE,
            match.game_id,
            reason or "approved",
            match_id=match.pk,
            match_ref=match.match_id,
            details={"previous_status": previous},
        ).save()
    match.refresh_from_db(fields=["status"])
    return match


def match_hold(*, match: Match, verdict: Verdict, actor: Actor) -> bool:
    """Hold an accepted match after the fact: its values are recomputed without it (its board
    entries go down or away) until a moderator approves or voids it. False if it was not
    accepted any more, or a person decided it (approved it): holds are the checks', and a
    moderator's decision is the last word."""
    with transaction.atomic():
        moved = recompute.matches_status_set(
            [match.pk], to=Match.Status.HELD, allowed=[Match.Status.ACCEPTED], undecided_only=True
        )
        if not moved:
            return False
        _events_draft(match.game_id, events.MATCH_HELD, [match.match_id])
        recompute.matches_counted_since_arrival([match.pk])
        _recompute(match.game, [match.pk], f"hold: {verdict.reason}", refreeze=False)
        _flag_audited(match, verdict, actor, action=verdict.action, audit=AuditEntry.Action.HOLD, after_the_fact=True)
    return True


def match_flag(*, match: Match, verdict: Verdict, actor: Actor) -> bool:
    """Put an accepted match in the review queue without taking it off the boards. False (and
    nothing written) when a person decided it already."""
    with transaction.atomic():
        if not Match.objects.select_for_update().filter(pk=match.pk, decided_at__isnull=True).exists():
            return False
        _flag_audited(match, verdict, actor, action="flag", audit=AuditEntry.Action.FLAG)
    return True


def _flag_audited(match: Match, verdict: Verdict, actor: Actor, *, action: str, audit: str, **details: object) -> None:
    """Put a match in the review queue and audit it (inside the caller's transaction)."""
    MatchFlag.objects.create(
        match=match, rule=verdict.rule, action=action, reason=verdict.reason, details=verdict.details
    )
    _audit(
        actor,
        audit,
        match.game_id,
        verdict.reason,
        match_id=match.pk,
        match_ref=match.match_id,
        details={"rule": verdict.rule, **details, **verdict.details},
    ).save()


def server_key_revoke(*, key: ServerKey, actor: Actor, reason: str = "revoked by a moderator") -> ServerKey:
    with transaction.atomic():
        already = key.revoked_at is not None
        scores_services.server_key_revoke(key=key)
        if not already:
            _audit(actor, AuditEntry.Action.REVOKE_KEY, key.game_id, reason, server_key=key).save()
    return key


# --- who moderates which game (docs/moderation.md, "Moderators per game") -------------------------

MODERATORS_GROUP = "moderators"  # made by the data migrations (anticheat/migrations/0002, 0007)


class ModeratorError(ValueError):
    """A grant or revoke that cannot be done as asked; nothing was changed."""


def _games(slugs: Sequence[str]) -> list[Game]:
    wanted = sorted(set(slugs))
    if not wanted:
        raise ModeratorError("name at least one game")
    found = list(Game.objects.filter(slug__in=wanted).order_by("slug"))
    unknown = sorted(set(wanted) - {g.slug for g in found})
    if unknown:
        raise ModeratorError(f"unknown game(s): {', '.join(unknown)}")
    return found


def moderator_grant(*, username: str, games: Sequence[str], password: str | None = None) -> list[GameModerator]:
    """Make `username` a staff moderator of `games` (slugs): staff, in the moderators group, one
    GameModerator row per game. A missing user is created with `password` (required then);
    an existing one keeps their password. Nobody is made a superuser here."""
    found = _games(games)
    user_model = get_user_model()
    with transaction.atomic():
        group = Group.objects.filter(name=MODERATORS_GROUP).first()
        if group is None:
            raise ModeratorError(f"the {MODERATORS_GROUP!r} group is missing: run the migrations")
        if not user_model.objects.filter(username=username).exists() and not password:
            raise ModeratorError(f"no user {username!r}: set MODERATOR_PASSWORD to create one")
        user, _ = user_model.objects.get_or_create(
            username=username, defaults={"password": make_password(password), "is_staff": True}
        )
        user_model.objects.filter(pk=user.pk, is_staff=False).update(is_staff=True)
        user.groups.add(group)
        GameModerator.objects.bulk_create(
            [GameModerator(user=user, game=game) for game in found], ignore_conflicts=True
        )  # a grant already there stays as it was
        return list(
            GameModerator.objects.filter(user=user, game__in=found).select_related("game").order_by("game__slug")
        )


def moderator_revoke(*, username: str, games: Sequence[str]) -> int:
    """Take `games` (slugs) away from `username`; returns how many grants went. The user stays
    staff and in the moderators group: with no game left they see no game's rows."""
    found = _games(games)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ModeratorError(f"no user {username!r}")
    deleted, _ = GameModerator.objects.filter(user=user, game__in=found).delete()
    return deleted
