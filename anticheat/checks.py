"""The ingest side of anti-cheat: the synchronous rules over a submission's new matches, and
the record of what they decided. Registered with scores/ingest/ in AnticheatConfig.ready(),
so the durable core calls the rules without importing this app; the calls run inside the
submission's transaction, so a rejection's audit entry and a hold's flags commit with it (and
never without it)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from anticheat.models import AuditEntry, MatchFlag
from anticheat.rules import Context, MatchLike, Verdict, evaluate, history_boards
from scores.ingest.checks import Held, NewMatches, Rejected
from scores.models import ServerKey
from scores.selectors import GameConfig

RULES_ACTOR = "anti-cheat rules"


class SubmissionChecker:
    """scores.ingest.SubmissionChecks, by the rules of anticheat/rules.py."""

    def history_boards(self, config: GameConfig) -> set[int]:
        return history_boards(config)

    def judge(self, new: NewMatches) -> dict[int, list[Verdict]]:
        return submissions_check(new.config, new.server_key, new.matches, new.now, history=new.history)

    def record(self, new: NewMatches, *, rejected: Rejected, held: Held) -> None:
        verdicts_record(new.config, new.server_key, rejected=rejected, held=held)


def submissions_check(
    config: GameConfig,
    server_key: ServerKey | None,
    matches: dict[int, MatchLike],
    now: datetime,
    *,
    history: dict[tuple[int, str], int] | None = None,
) -> dict[int, list[Verdict]]:
    """Per request index, what the rules say (absent: accepted as it is)."""
    return evaluate(Context(config=config, server_key=server_key, now=now, matches=dict(matches), history=history))


def _actor(server_key: ServerKey | None) -> str:
    return f"{RULES_ACTOR} (server key {server_key.key_id})" if server_key else RULES_ACTOR


def verdicts_record(
    config: GameConfig,
    server_key: ServerKey | None,
    *,
    rejected: Sequence[tuple[MatchLike, Verdict]],
    held: Sequence[tuple[int, str, list[Verdict]]],
) -> None:
    """Audit rejected attempts (nothing of them is stored elsewhere) and flag held matches."""
    entries = [
        AuditEntry(
            action=AuditEntry.Action.REJECT,
            actor=_actor(server_key),
            actor_key=server_key,
            game=config.game,
            match_ref=match.match_id,
            server_key=server_key,
            reason=verdict.reason,
            details={
                "rule": verdict.rule,
                **verdict.details,
                "ended_at": match.ended_at.isoformat(),
                "results": [{"player": r.player, "board": r.board, "score": r.score} for r in match.results],
            },
        )
        for match, verdict in rejected
    ]
    flags = []
    for match_pk, match_id, verdicts in held:
        holds = [v for v in verdicts if v.action == "hold"]
        entries.append(
            AuditEntry(
                action=AuditEntry.Action.HOLD,
                actor=_actor(server_key),
                actor_key=server_key,
                game=config.game,
                match_id=match_pk,
                match_ref=match_id,
                server_key=server_key,
                reason="; ".join(v.reason for v in holds),
                details={"rules": [v.rule for v in holds]},
            )
        )
        flags += [
            MatchFlag(match_id=match_pk, rule=v.rule, action=v.action, reason=v.reason, details=v.details)
            for v in holds
        ]
    if entries:
        AuditEntry.objects.bulk_create(entries)
    if flags:
        MatchFlag.objects.bulk_create(flags)
