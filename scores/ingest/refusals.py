"""Results a new match may not count, per result: asked of the apps that register here in their
AppConfig.ready() (competitions/ registers its tournaments' rules, and its leagues' placement,
which refuses nothing: docs/competitions.md), so the durable core calls them without importing them.

They are asked inside the submission's transaction, after the append and the anti-cheat rules,
about the matches those kept; whatever they count or record (a tournament's attempts, a league
placement) is written in that transaction, so a submission that rolls back counts nothing."""

from __future__ import annotations

from typing import Protocol

from scores.ingest.matches import InvalidMatch, MatchIn
from scores.selectors import GameConfig

# request index -> result index -> why that result does not count
Refused = dict[int, dict[int, InvalidMatch]]


class ResultRefusals(Protocol):
    def refuse(self, *, config: GameConfig, matches: dict[int, MatchIn], player_ids: dict[str, int]) -> Refused:
        """The results of these new matches (by request index) that do not count, and why."""
        ...


_registered: dict[str, ResultRefusals] = {}


def result_refusals_register(refusals: ResultRefusals, *, uid: str) -> None:
    """Called by an app's ready(); `uid` makes registering twice harmless."""
    _registered[uid] = refusals


def refused(config: GameConfig, matches: dict[int, MatchIn], player_ids: dict[str, int]) -> Refused:
    found: Refused = {}
    if matches:
        for refusals in _registered.values():
            for i, per_result in refusals.refuse(config=config, matches=matches, player_ids=player_ids).items():
                found.setdefault(i, {}).update(per_result)
    return found
