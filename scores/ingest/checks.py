"""The synchronous checks a submission's new matches go through: registered by anticheat/ in
its AppConfig.ready(), so the durable core calls the rules without importing them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from scores.ingest.matches import MatchIn
from scores.models import ServerKey
from scores.selectors import GameConfig


class Verdict(Protocol):
    action: str  # reject | hold
    reason: str


@dataclass(frozen=True)
class NewMatches:
    """What the rules judge: a submission's new matches (by request index), and what the
    submission's transaction already knows about them."""

    config: GameConfig
    server_key: ServerKey | None
    matches: dict[int, MatchIn]
    # (board_id, external player id) -> the player's all-time encoded value before the
    # submission, as the append statement read it for the boards of history_boards()
    history: dict[tuple[int, str], int]
    now: datetime


Rejected = Sequence[tuple[MatchIn, Verdict]]  # each refused match with the verdict that refused it
Held = Sequence[tuple[int, str, list[Verdict]]]  # (match pk, match id, verdicts) of each held match


class SubmissionChecks(Protocol):
    """What ingest asks of the anti-cheat rules (anticheat/checks.py implements it)."""

    def history_boards(self, config: GameConfig) -> set[int]:
        """Boards whose players' current all-time values the rules read (the append returns them)."""
        ...

    def judge(self, new: NewMatches) -> dict[int, list[Verdict]]:
        """Per request index of a new match, what the rules say (absent: accepted as it is)."""
        ...

    def record(self, new: NewMatches, *, rejected: Rejected, held: Held) -> None:
        """Audit rejections and flag held matches, inside the submission's transaction."""
        ...


_registered: dict[str, SubmissionChecks] = {}
_checks: list[SubmissionChecks] = []


def submission_checks_register(checks: SubmissionChecks, *, uid: str) -> None:
    """Called by an app's ready(): its rules judge every new match from then on. `uid` makes
    registering twice harmless, as dispatch_uid does for signals."""
    _registered[uid] = checks
    _checks[:] = list(_registered.values())


def judge(new: NewMatches) -> dict[int, list[Verdict]]:
    """Every registered rule set's verdicts on the new matches (rules judge new matches only:
    a retry of a stored match is answered from what was stored, never rejected or held anew)."""
    verdicts: dict[int, list[Verdict]] = {}
    if new.matches:
        for checks in _checks:
            for i, vs in checks.judge(new).items():
                verdicts.setdefault(i, []).extend(vs)
    return verdicts


def history_boards(config: GameConfig) -> set[int]:
    """The boards whose players' all-time values some rule reads (the append returns them)."""
    return set().union(*(c.history_boards(config) for c in _checks)) if _checks else set()


def record(new: NewMatches, *, rejected: Rejected, held: Held) -> None:
    for checks in _checks:
        checks.record(new, rejected=rejected, held=held)
