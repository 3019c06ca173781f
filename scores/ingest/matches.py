"""What a submission is made of, as ingest sees it, and how it can be refused."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from leaderboard_project.errors import ApiError, Conflict


class InvalidMatch(ApiError):
    code = "invalid_match"  # a match the game's boards cannot take as sent


class MatchConflict(Conflict):
    code = "match_conflict"  # the id was stored with another body, or a region claim raced


class RuleRejected(ApiError):
    """An anti-cheat rule refused the match (docs/moderation.md); kept in the audit log only."""

    code = "rule_rejected"


@dataclass(frozen=True)
class ResultIn:
    player: str
    board: str
    score: int
    display_name: str | None = None
    metadata: dict[str, Any] | None = None
    region: str | None = None
    # {name: value} of the board's declared sub-scores (docs/api.md §2.3); None: none sent
    subscores: dict[str, int] | None = None


@dataclass(frozen=True)
class MatchIn:
    match_id: str
    ended_at: datetime
    results: tuple[ResultIn, ...]

    def body_hash(self) -> str:
        """Hash of the canonical body: the same match sent with other spacing is the same match."""
        canonical = {
            "match_id": self.match_id,
            "ended_at": self.ended_at.astimezone(UTC).isoformat(),
            "results": [
                {
                    "player": r.player,
                    "board": r.board,
                    "score": r.score,
                    "display_name": r.display_name,
                    "metadata": r.metadata,
                    **({"region": r.region} if r.region is not None else {}),
                    **({"subscores": r.subscores} if r.subscores is not None else {}),
                }
                for r in self.results
            ],
        }
        return hashlib.sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass
class MatchOutcome:
    match_id: str
    status: str  # accepted | held | voided (a duplicate of a voided match) | rejected
    duplicate: bool = False
    error: ApiError | None = None
    # windows already frozen when the match arrived: it counts in the others only
    missed_windows: list[str] = field(default_factory=list)
