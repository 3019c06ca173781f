// Typed errors: one class per error code (docs/api.md §14), under one class per HTTP status (as the
// Python client, clients/python/src/leaderboard_client/errors.py).

export class LeaderboardError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** No answer (refused, dropped, timed out) after every retry. */
export class TransportError extends LeaderboardError {}

export class ApiError extends LeaderboardError {
  static status = 0;
  static code = "error";
  readonly status: number;
  readonly code: string;
  readonly retryAfter: number | null;
  readonly body: unknown;

  constructor(message: string, opts: { status?: number; code?: string; retryAfter?: number | null; body?: unknown } = {}) {
    super(message);
    const cls = new.target as unknown as typeof ApiError;
    this.status = opts.status ?? cls.status;
    this.code = opts.code ?? cls.code;
    this.retryAfter = opts.retryAfter ?? null;
    this.body = opts.body;
  }

  override toString(): string {
    return `${this.status} ${this.code}: ${this.message}`;
  }
}

export class BadRequest extends ApiError { static override status = 400; static override code = "invalid_request"; }
export class Unauthorized extends ApiError { static override status = 401; static override code = "authentication_failed"; }
export class Forbidden extends ApiError { static override status = 403; static override code = "forbidden"; }
export class NotFound extends ApiError { static override status = 404; static override code = "not_found"; }
export class MethodNotAllowed extends ApiError { static override status = 405; static override code = "method_not_allowed"; }
export class NotAcceptable extends ApiError { static override status = 406; static override code = "not_acceptable"; }
export class UnsupportedMediaType extends ApiError { static override status = 415; static override code = "unsupported_media_type"; }
export class Conflict extends ApiError { static override status = 409; static override code = "conflict"; }
export class Gone extends ApiError { static override status = 410; static override code = "gone"; }
export class PayloadTooLarge extends ApiError { static override status = 413; static override code = "payload_too_large"; }
export class RateLimited extends ApiError { static override status = 429; static override code = "rate_limited"; }
export class ServerError extends ApiError { static override status = 500; static override code = "internal_error"; }
export class ServiceUnavailable extends ApiError { static override status = 503; static override code = "unavailable"; }

export class InvalidJson extends BadRequest { static override code = "invalid_json"; }
export class InvalidBody extends BadRequest { static override code = "invalid_body"; }
export class InvalidMatch extends BadRequest { static override code = "invalid_match"; }
export class InvalidMatchId extends BadRequest { static override code = "invalid_match_id"; }
export class InvalidPlayer extends BadRequest { static override code = "invalid_player"; }
export class EndedAtInFuture extends BadRequest { static override code = "ended_at_in_future"; }
export class ScoreOutOfBounds extends BadRequest { static override code = "score_out_of_bounds"; }
export class InvalidCursor extends BadRequest { static override code = "invalid_cursor"; }
export class RuleRejected extends BadRequest { static override code = "rule_rejected"; }
export class RegionChanged extends BadRequest { static override code = "region_changed"; }
export class NotInTournament extends BadRequest { static override code = "not_in_tournament"; }
export class TournamentClosed extends BadRequest { static override code = "tournament_closed"; }
export class NoAttemptsLeft extends BadRequest { static override code = "no_attempts_left"; }
export class InvalidQuery extends BadRequest { static override code = "invalid_query"; }
export class NotAuthenticated extends Unauthorized { static override code = "not_authenticated"; }
export class AuthenticationFailed extends Unauthorized { static override code = "authentication_failed"; }
export class UnknownGame extends NotFound { static override code = "unknown_game"; }
/** 404 on a read; 400 on a submission naming a board the game does not have. */
export class UnknownBoard extends ApiError { static override code = "unknown_board"; }
export class UnknownRegion extends ApiError { static override code = "unknown_region"; }
export class UnknownPlayer extends NotFound { static override code = "unknown_player"; }
export class UnknownWindow extends NotFound { static override code = "unknown_window"; }
export class NotFrozen extends NotFound { static override code = "not_frozen"; }
export class UnknownVersion extends NotFound { static override code = "unknown_version"; }
export class UnknownMatch extends NotFound { static override code = "unknown_match"; }
export class UnknownGroup extends NotFound { static override code = "unknown_group"; }
export class MatchConflict extends Conflict { static override code = "match_conflict"; }
export class MatchVoided extends Conflict { static override code = "match_voided"; }
/** docs/api.md §13.1: the events feed dropped the events after this cursor. */
export class CursorExpired extends Gone { static override code = "cursor_expired"; }
export class TournamentFull extends Conflict { static override code = "tournament_full"; }
export class TournamentEnded extends Conflict { static override code = "tournament_ended"; }
/** docs/api.md §4.5: nothing was stored; the same body with the same match_id is safe to retry. */
export class Overloaded extends ServiceUnavailable { static override code = "overloaded"; }
export class DatabaseUnavailable extends ServiceUnavailable { static override code = "database_unavailable"; }
/** docs/api.md §3.1: minting a player token or login link waits for Redis; retry later. */
export class RedisUnavailable extends ServiceUnavailable { static override code = "redis_unavailable"; }

const STATUS_CLASSES: (typeof ApiError)[] = [
  BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, NotAcceptable, Conflict, Gone, PayloadTooLarge,
  UnsupportedMediaType, RateLimited, ServerError, ServiceUnavailable,
];
const CODE_CLASSES: (typeof ApiError)[] = [
  InvalidJson, InvalidBody, InvalidMatch, InvalidMatchId, InvalidPlayer, EndedAtInFuture, ScoreOutOfBounds,
  InvalidCursor, RuleRejected, RegionChanged, NotInTournament, TournamentClosed, NoAttemptsLeft, InvalidQuery,
  NotAuthenticated, AuthenticationFailed, UnknownGame, UnknownBoard, UnknownRegion, UnknownPlayer, UnknownWindow,
  NotFrozen, UnknownVersion, UnknownMatch, UnknownGroup, MatchConflict, MatchVoided, CursorExpired, TournamentFull, TournamentEnded, Overloaded,
  DatabaseUnavailable, RedisUnavailable,
];

/** Every error code's class (docs/api.md §14) (a status class's own code names it too). */
export const ERROR_CODES: ReadonlyMap<string, typeof ApiError> = new Map([
  ...STATUS_CLASSES.map((c) => [c.code, c] as const),
  ...CODE_CLASSES.map((c) => [c.code, c] as const),
]);

/** The error for an answer: the class of its code, else of its status. */
export function errorFor(status: number, code: string | null | undefined, message: string,
                         opts: { retryAfter?: number | null; body?: unknown } = {}): ApiError {
  const cls = ERROR_CODES.get(code ?? "") ?? STATUS_CLASSES.find((c) => c.status === status)
    ?? (status >= 500 ? ServerError : ApiError);
  return new cls(message, { status, code: code ?? cls.code, ...opts });
}
