"""Typed errors: one class per error code of docs/api.md §14 (`{"error": {"code", "message"}}`),
under one class per HTTP status, so callers catch as narrowly as they need:

    except MatchConflict: ...     # this code only
    except Conflict: ...          # any 409
    except ApiError: ...          # any answer with an error body
    except LeaderboardError: ...  # that, or the service could not be reached at all"""

from __future__ import annotations

from typing import Any


class LeaderboardError(Exception):
    """Anything this client raises."""


class TransportError(LeaderboardError):
    """No answer (connection refused or dropped, timeout) after every retry."""


class ApiError(LeaderboardError):
    """An answer with the error body of docs/api.md §14. `status` is the HTTP status, `code` the
    error code, `retry_after` the seconds of a Retry-After header (None without one)."""

    status: int = 0
    code: str = "error"

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 retry_after: float | None = None, body: Any = None) -> None:  # fmt: skip
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


# --- by status ------------------------------------------------------------------------------


class BadRequest(ApiError):
    status = 400
    code = "invalid_request"


class Unauthorized(ApiError):
    """Missing, malformed, wrong or expired signature or token."""

    status = 401
    code = "authentication_failed"


class Forbidden(ApiError):
    """A key of another game, revoked, or without the scope; a player reading another's rank."""

    status = 403
    code = "forbidden"


class NotFound(ApiError):
    status = 404
    code = "not_found"


class MethodNotAllowed(ApiError):
    status = 405
    code = "method_not_allowed"


class NotAcceptable(ApiError):
    status = 406
    code = "not_acceptable"


class Conflict(ApiError):
    status = 409
    code = "conflict"


class Gone(ApiError):
    status = 410
    code = "gone"


class PayloadTooLarge(ApiError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(ApiError):
    status = 415
    code = "unsupported_media_type"


class RateLimited(ApiError):
    """429: retried (after Retry-After) until the retries run out, then raised."""

    status = 429
    code = "rate_limited"


class ServerError(ApiError):
    status = 500
    code = "internal_error"


class ServiceUnavailable(ApiError):
    """503: retried (after Retry-After) until the retries run out, then raised."""

    status = 503
    code = "unavailable"


# --- by code (docs/api.md §14) ---------------------------------------------------------------


class InvalidJson(BadRequest):
    code = "invalid_json"


class InvalidBody(BadRequest):
    code = "invalid_body"


class InvalidMatch(BadRequest):
    code = "invalid_match"


class InvalidMatchId(BadRequest):
    code = "invalid_match_id"


class InvalidPlayer(BadRequest):
    code = "invalid_player"


class EndedAtInFuture(BadRequest):
    code = "ended_at_in_future"


class ScoreOutOfBounds(BadRequest):
    code = "score_out_of_bounds"


class InvalidCursor(BadRequest):
    """A `top` cursor that is not one the service gave, or sent with an offset (docs/api.md §5.3)."""

    code = "invalid_cursor"


class RuleRejected(BadRequest):
    """An anti-cheat rule refused the match (docs/moderation.md)."""

    code = "rule_rejected"


class RegionChanged(BadRequest):
    code = "region_changed"


class NotInTournament(BadRequest):
    code = "not_in_tournament"


class TournamentClosed(BadRequest):
    code = "tournament_closed"


class NoAttemptsLeft(BadRequest):
    code = "no_attempts_left"


class InvalidQuery(BadRequest):
    """A query parameter's value the read does not take (docs/api.md §10, §12.1)."""

    code = "invalid_query"


class NotAuthenticated(Unauthorized):
    code = "not_authenticated"


class AuthenticationFailed(Unauthorized):
    code = "authentication_failed"


class UnknownGame(NotFound):
    code = "unknown_game"


class UnknownBoard(ApiError):
    """404 on a read; 400 on a submission naming a board the game does not have."""

    code = "unknown_board"


class UnknownRegion(ApiError):
    """404 on a read; 400 on a submission."""

    code = "unknown_region"


class UnknownPlayer(NotFound):
    code = "unknown_player"


class UnknownWindow(NotFound):
    code = "unknown_window"


class NotFrozen(NotFound):
    """The standings of that window are not frozen yet (docs/api.md §10)."""

    code = "not_frozen"


class UnknownVersion(NotFound):
    code = "unknown_version"


class UnknownMatch(NotFound):
    code = "unknown_match"


class UnknownGroup(NotFound):
    """No such league group frozen in that season window (docs/api.md §10)."""

    code = "unknown_group"


class CursorExpired(Gone):
    """The events feed dropped the events after this cursor (docs/api.md §13.1): start again
    without one, and reconcile from the boards."""

    code = "cursor_expired"


class MatchConflict(Conflict):
    """The match_id was stored with another body (docs/api.md §4)."""

    code = "match_conflict"


class MatchVoided(Conflict):
    code = "match_voided"


class TournamentFull(Conflict):
    code = "tournament_full"


class TournamentEnded(Conflict):
    code = "tournament_ended"


class Overloaded(ServiceUnavailable):
    """docs/api.md §4.5: nothing was stored; the same body with the same match_id is safe to retry."""

    code = "overloaded"


class DatabaseUnavailable(ServiceUnavailable):
    code = "database_unavailable"


class RedisUnavailable(ServiceUnavailable):
    """docs/api.md §3.1: minting a player token or login link waits for Redis; retry later."""

    code = "redis_unavailable"


def _subclasses(cls: type[ApiError]) -> list[type[ApiError]]:
    out: list[type[ApiError]] = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


_STATUS_CLASSES: dict[int, type[ApiError]] = {
    c.status: c
    for c in (BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, NotAcceptable, Conflict, Gone,
              PayloadTooLarge, UnsupportedMediaType, RateLimited, ServerError, ServiceUnavailable)
}  # fmt: skip
# every code's class; a status class's own code names it too (a 409 "conflict" is Conflict)
ERROR_CODES: dict[str, type[ApiError]] = {c.code: c for c in _subclasses(ApiError) if c not in _STATUS_CLASSES.values()}
for _cls in _STATUS_CLASSES.values():
    ERROR_CODES.setdefault(_cls.code, _cls)


def error_for(status: int, code: str | None, message: str, *, retry_after: float | None = None,
              body: Any = None) -> ApiError:  # fmt: skip
    """The exception for an error answer: the class of its code, else of its status."""
    cls = ERROR_CODES.get(code or "")
    if cls is None:
        cls = _STATUS_CLASSES.get(status) or (ServerError if status >= 500 else ApiError)
    return cls(message, status=status, code=code or cls.code, retry_after=retry_after, body=body)


__all__ = [n for n, v in list(globals().items()) if isinstance(v, type) and issubclass(v, LeaderboardError)]
__all__ += ["ERROR_CODES", "error_for"]
