"""Submitting matches: decide what each one is (invalid, new, a duplicate, a conflict), store
the new ones in one transaction with the append statement (append.py), let the registered
rules judge them (checks.py), settle rejects and holds, and wake the projector after the
commit. The package's docstring (scores/ingest/__init__.py) says what a submission costs."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from scores.admission import admission_check, admission_recheck
from scores.ingest import checks, refusals
from scores.ingest.append import (
    PlayerRace,
    append,
    matches_delete,
    matches_existing,
    matches_hold,
    results_delete,
)
from scores.ingest.matches import InvalidMatch, MatchConflict, MatchIn, MatchOutcome, RuleRejected
from scores.ingest.regions import region_claims_load, region_claims_store, regionalize
from scores.locks import NOTIFY_CHANNEL
from scores.models import Game, ServerKey
from scores.selectors import BoardConfig, GameConfig, game_config


def match_submit(*, game: Game, server_key: ServerKey | None, match: MatchIn) -> MatchOutcome:
    """Store one match. Raises InvalidMatch (400) or MatchConflict (409)."""
    outcome = matches_submit(game=game, server_key=server_key, matches=[match])[0]
    if outcome.error is not None:
        raise outcome.error
    return outcome


def matches_submit(
    *,
    game: Game,
    server_key: ServerKey | None,
    matches: Sequence[MatchIn],
    now: datetime | None = None,
    admitted: bool = False,
) -> list[MatchOutcome]:
    """Store many matches in one transaction; each stands alone (a bad one is rejected). Raises
    Overloaded (503) before storing anything while the boards are too far behind (scores/admission.py);
    `admitted`: each match was admitted one by one already (the gathered single submissions of
    scores/ingest/gather.py, each decided in its own request)."""
    large = False if admitted else admission_check(matches=len(matches))
    now = now or timezone.now()
    config = game_config(game)
    outcomes: list[MatchOutcome | None] = [None] * len(matches)
    candidates: dict[str, tuple[int, MatchIn, str]] = {}
    repeats: list[tuple[int, MatchIn, str]] = []
    claims = region_claims_load(config, matches)
    for i, match in enumerate(matches):
        digest = match.body_hash()  # of the match as sent, before regions are filled in
        try:
            _check_match(config, match, now)
            match = regionalize(config, match, claims)
        except InvalidMatch as exc:
            outcomes[i] = MatchOutcome(match.match_id, "rejected", error=exc)
            continue
        item = (i, match, digest)
        if match.match_id in candidates:
            repeats.append(item)  # the same match twice in one batch: judged against the first
        else:
            candidates[match.match_id] = item
    firsts = dict(candidates)  # what a repeat inside the batch is judged against
    stored_before: dict[str, tuple[str, str]] = {}  # (digest, status) of ids stored by earlier requests
    if candidates:
        try:
            with transaction.atomic():
                if large:
                    admission_recheck(matches=len(matches))
                _store(config, server_key, candidates, outcomes, now, stored_before)
        except PlayerRace:
            # a concurrent request created one of the players meanwhile: again, players first,
            # which cannot race
            with transaction.atomic():
                if large:
                    admission_recheck(matches=len(matches))
                _store(config, server_key, candidates, outcomes, now, stored_before, players_first=True)
    for i, match, digest in repeats:
        first = firsts[match.match_id]
        first_outcome = outcomes[first[0]]
        if first_outcome.error is not None and first_outcome.error.code != MatchConflict.code:
            # refused by a rule or a tournament: the repeat is refused alike
            outcomes[i] = MatchOutcome(match.match_id, "rejected", error=first_outcome.error)
            continue
        # each match stands alone: a repeat of an id stored earlier is judged against what is
        # stored, not against a sibling that conflicted with it
        against = stored_before.get(match.match_id) or (first[2], first_outcome.status)
        outcomes[i] = _repeat_outcome(match.match_id, digest, against)
    return [o for o in outcomes if o is not None]


def _store(
    config: GameConfig,
    server_key: ServerKey | None,
    candidates: dict[str, tuple[int, MatchIn, str]],
    outcomes: list[MatchOutcome | None],
    now: datetime,
    stored_before: dict[str, tuple[str, str]],
    *,
    players_first: bool = False,
) -> None:
    """The transaction: append, judge the new matches, settle rejects and holds."""
    items = sorted(candidates.values(), key=lambda it: it[1].match_id)  # one lock order for all
    appended = append(config, server_key, items, checks.history_boards(config), players_first=players_first)
    stored = appended.old
    missing = [mid for mid in candidates if mid not in appended.new and mid not in stored]
    if missing:  # inserted by a request that committed after the statement's snapshot
        stored.update(matches_existing(config.game.id, missing))
    fresh = {i: m for mid, (i, m, _) in candidates.items() if mid in appended.new}
    new = checks.NewMatches(config=config, server_key=server_key, matches=fresh, history=appended.history, now=now)
    verdicts = checks.judge(new)
    survivors = {i: m for i, m in fresh.items() if not any(v.action == "reject" for v in verdicts.get(i, []))}
    # per-result refusals (a tournament's: docs/competitions.md), asked after the rules kept the match
    dropped = refusals.refused(config, survivors, appended.players)
    rejected, held, kept = [], [], []
    gone: list[int] = []  # matches every result of which was refused: not stored at all
    partial: list[tuple[int, int, int]] = []  # the refused results of the others
    for match_id, (i, match, digest) in candidates.items():
        if match_id not in appended.new:
            stored_before[match_id] = stored[match_id]
            outcomes[i] = _repeat_outcome(match_id, digest, stored[match_id])
            continue
        mine = verdicts.get(i, [])
        refusal = next((v for v in mine if v.action == "reject"), None)
        if refusal is not None:
            outcomes[i] = MatchOutcome(match_id, "rejected", error=RuleRejected(refusal.reason))
            rejected.append((match, refusal))
            continue
        refused_here = dropped.get(i)
        if refused_here and len(refused_here) == len(match.results):
            outcomes[i] = MatchOutcome(match_id, "rejected", error=refused_here[min(refused_here)])
            gone.append(appended.new[match_id])
            continue
        if refused_here:
            pk = appended.new[match_id]
            partial += [
                (pk, config.boards[match.results[k].board].id, appended.players[match.results[k].player])
                for k in refused_here
            ]
            match = dataclasses.replace(
                match, results=tuple(r for k, r in enumerate(match.results) if k not in refused_here)
            )
        kept.append(match)
        if any(v.action == "hold" for v in mine):
            outcomes[i] = MatchOutcome(match_id, "held")
            held.append((appended.new[match_id], match_id, mine))
        else:
            # what the response says; the projector applies the same cutoffs when it counts it
            missed = (
                sorted({w for b, w in appended.windows[match_id] if (b, w) in appended.cutoffs})
                if appended.cutoffs
                else []
            )
            outcomes[i] = MatchOutcome(match_id, "accepted", missed_windows=missed)
        if refused_here:
            # the answer (docs/api.md §4) for the refused result; the match's other results count
            outcomes[i] = dataclasses.replace(outcomes[i], status="rejected", error=refused_here[min(refused_here)])
    if rejected or gone:
        matches_delete([appended.new[m.match_id] for m, _ in rejected] + gone)
    if partial:
        results_delete(partial)
    if held:
        matches_hold([pk for pk, _, _ in held])
    if config.regions:
        region_claims_store(config, kept, appended.players)
    checks.record(new, rejected=rejected, held=held)
    if appended.new:
        transaction.on_commit(_wake, robust=True)  # a failed wake-up fails nothing


def _wake() -> None:
    """Tell the projector there is work (it also looks every second on its own).

    Not inside the submission's transaction: a transaction that NOTIFYs holds a global lock
    from before its commit record is flushed until after, so every submission's commit would
    wait for the one before it (one WAL flush at a time: ~110 submissions/s here, measured).
    Here it is a transaction of its own, whose commit need not wait for the disk (a lost
    wake-up is harmless), so the lock is held for microseconds."""
    with connection.cursor() as cur:
        cur.execute("SELECT set_config('synchronous_commit', 'off', true), pg_notify(%s, '')", [NOTIFY_CHANNEL])


def _repeat_outcome(match_id: str, digest: str, stored: tuple[str, str]) -> MatchOutcome:
    stored_hash, stored_status = stored
    if stored_hash == digest and stored_status != "rejected":
        return MatchOutcome(match_id, stored_status, duplicate=True)
    return MatchOutcome(
        match_id,
        "rejected",
        error=MatchConflict(f"match_id {match_id!r} was already submitted with a different body"),
    )


def _check_match(config: GameConfig, match: MatchIn, now: datetime) -> None:
    if match.ended_at > now + timedelta(seconds=settings.MAX_ENDED_AT_FUTURE_SECONDS):
        raise InvalidMatch(
            f"ended_at is more than {settings.MAX_ENDED_AT_FUTURE_SECONDS} s in the future", code="ended_at_in_future"
        )
    for i, result in enumerate(match.results):
        board = config.boards.get(result.board)
        if board is None:
            raise InvalidMatch(f"results[{i}].board: unknown board {result.board!r}", code="unknown_board")
        if result.region is not None and result.region not in config.regions:
            raise InvalidMatch(f"results[{i}].region: unknown region {result.region!r}", code="unknown_region")
        if not board.min_score <= result.score <= board.max_score:
            raise InvalidMatch(
                f"results[{i}].score: {result.score} is outside [{board.min_score}, {board.max_score}] "
                f"of board {board.slug!r}",
                code="score_out_of_bounds",
            )
        if result.subscores is not None:
            _check_subscores(board, i, result.subscores)


def _check_subscores(board: BoardConfig, i: int, given: dict[str, int]) -> None:
    """Each sent sub-score must be one the board declares, within its bounds (docs/api.md §2.3)."""
    declared = {s.name: s for s in board.subscores}
    for name, value in given.items():
        sub = declared.get(name)
        if sub is None:
            names = ", ".join(repr(n) for n in declared) or "none"
            raise InvalidMatch(
                f"results[{i}].subscores.{name}: board {board.slug!r} has no sub-score {name!r} (it declares {names})"
            )
        if not sub.min <= value <= sub.max:
            raise InvalidMatch(
                f"results[{i}].subscores.{name}: {value} is outside [{sub.min}, {sub.max}] of board {board.slug!r}",
                code="score_out_of_bounds",
            )
