"""Writes of the durable store: match ingest, server keys, game configuration.

Ingest runs as one transaction per request (single match or batch):
  1. insert the matches, ON CONFLICT (game, match_id) DO NOTHING: the unique constraint, not
     a prior read, decides what is new; what is not new is a duplicate or a conflict;
  2. upsert the players, insert the results;
  3. upsert each affected player's value per board and window with a conditional write
     (best: only a larger encoded score replaces; total: sum), returning what changed;
  4. record the changes in the board outbox;
and after commit sends `score_accepted` so boards/ mirrors the new absolute values to Redis.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from anticheat import checks
from leaderboard_project.errors import ApiError, Conflict
from scores import encoding, pgarrays
from scores.auth import make_player_token, server_key_secret, server_keys_changed
from scores.config import ConfigError, GameSpec
from scores.models import (
    Board,
    BoardOutbox,
    Friendship,
    Game,
    Player,
    PlayerValue,
    Region,
    Season,
    ServerKey,
)
from scores.selectors import GameConfig, game_config
from scores.signals import friends_changed, matches_stored, score_accepted, values_rewritten
from scores.windows import bounds, in_region, seasons_at, windows_for
from seasons.selectors import frozen_windows


class InvalidMatch(ApiError):
    code = "invalid_match"


class MatchConflict(Conflict):
    code = "match_conflict"


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


@dataclass
class _Value:
    """One player's contribution to one board window, pre-aggregated within a request."""

    value: int
    reached_at: datetime
    encoded: int
    metadata: dict[str, Any] | None
    latest_at: datetime  # ended_at of the latest contribution (the metadata's source)


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


# --- regions ---------------------------------------------------------------------------------

ClaimKey = tuple[str, str | None]  # (player id, season slug or None outside seasons)


def _claim_seasons(config: GameConfig, ended_at: datetime) -> list[str | None]:
    return [s.slug for s in seasons_at(ended_at, config.seasons)] or [None]


def _region_claims_load(config: GameConfig, matches: Sequence[MatchIn]) -> dict[ClaimKey, str]:
    """The regions already recorded for the players of these matches (no query for games
    without regions)."""
    if not config.regions:
        return {}
    players = sorted({r.player for m in matches for r in m.results})
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT p.external_id, s.slug, r.slug
            FROM scores_playerregion pr
            JOIN scores_player p ON p.id = pr.player_id
            JOIN scores_region r ON r.id = pr.region_id
            LEFT JOIN scores_season s ON s.id = pr.season_id
            WHERE p.game_id = %s AND p.external_id = ANY(%s::text[])
            """,
            [config.game.id, pgarrays.texts(players)],
        )
        return {(player, season): region for player, season, region in cur.fetchall()}


def _regionalize(config: GameConfig, match: MatchIn, claims: dict[ClaimKey, str]) -> MatchIn:
    """Check the match's regions against the players' recorded ones and fill in the known
    region of results that name none. Records the match's claims in `claims`."""
    if not config.regions:
        return match
    seasons = _claim_seasons(config, match.ended_at)
    mine: dict[ClaimKey, str] = {}
    results = []
    for i, r in enumerate(match.results):
        region = r.region
        for season in seasons:
            known = mine.get((r.player, season)) or claims.get((r.player, season))
            if region is None:
                region = known
            elif known is not None and known != region:
                during = f"season {season}" if season else "this off-season"
                raise InvalidMatch(
                    f"results[{i}].region: player {r.player!r} plays in region {known!r} during {during}; "
                    "a player's region cannot change within a season",
                    code="region_changed",
                )
        if region is not None:
            mine.update({(r.player, season): region for season in seasons})
        results.append(r if region == r.region else dataclasses.replace(r, region=region))
    claims.update(mine)
    return dataclasses.replace(match, results=tuple(results))


def _region_claims_store(config: GameConfig, matches: list[tuple[int, MatchIn]], player_ids: dict[str, int]) -> None:
    """Record new (player, season) -> region claims. The unique constraint decides between
    two requests racing to set different regions: the loser is refused whole (409)."""
    wanted: dict[tuple[int, int | None], int] = {}
    for _, match in matches:
        for season in _claim_seasons(config, match.ended_at):
            for r in match.results:
                if r.region is not None:
                    season_id = config.season_ids[season] if season else None
                    wanted[(player_ids[r.player], season_id)] = config.regions[r.region].id
    if not wanted:
        return
    rows = sorted(wanted.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO scores_playerregion (player_id, season_id, region_id)
            SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[])
            ON CONFLICT (player_id, season_id) DO NOTHING
            """,
            [
                pgarrays.ints(p for (p, _), _ in rows),
                pgarrays.ints(s for (_, s), _ in rows),
                pgarrays.ints(r for _, r in rows),
            ],
        )
        cur.execute(
            "SELECT player_id, season_id, region_id FROM scores_playerregion WHERE player_id = ANY(%s::bigint[])",
            [pgarrays.ints(sorted({p for p, _ in wanted}))],
        )
        stored = {(p, s): r for p, s, r in cur.fetchall()}
    if any(stored.get(key) != region for key, region in wanted.items()):
        raise MatchConflict("a player's region was set by another request at the same time; retry")


def match_submit(*, game: Game, server_key: ServerKey | None, match: MatchIn) -> MatchOutcome:
    """Store one match. Raises InvalidMatch (400) or MatchConflict (409)."""
    outcome = matches_submit(game=game, server_key=server_key, matches=[match])[0]
    if outcome.error is not None:
        raise outcome.error
    return outcome


def matches_submit(
    *, game: Game, server_key: ServerKey | None, matches: Sequence[MatchIn], now: datetime | None = None
) -> list[MatchOutcome]:
    """Store many matches in one transaction; each stands alone (a bad one is rejected)."""
    now = now or timezone.now()
    config = game_config(game)
    outcomes: list[MatchOutcome | None] = [None] * len(matches)
    candidates: dict[str, tuple[int, MatchIn, str]] = {}
    repeats: list[tuple[int, MatchIn, str]] = []
    claims = _region_claims_load(config, matches)
    for i, match in enumerate(matches):
        digest = match.body_hash()  # of the match as sent, before regions are filled in
        try:
            _check_match(config, match, now)
            match = _regionalize(config, match, claims)
        except InvalidMatch as exc:
            outcomes[i] = MatchOutcome(match.match_id, "rejected", error=exc)
            continue
        item = (i, match, digest)
        if match.match_id in candidates:
            repeats.append(item)  # the same match twice in one batch: judged against the first
        else:
            candidates[match.match_id] = item

    firsts = dict(candidates)  # what a repeat inside the batch is judged against
    if candidates:
        with transaction.atomic():
            # Rules judge new matches only: a retry of a stored match is answered from what
            # was stored, never rejected or held anew.
            stored_before = _matches_existing(game, list(candidates))
            fresh = {i: m for mid, (i, m, _) in candidates.items() if mid not in stored_before}
            verdicts = checks.submissions_check(config, server_key, fresh, now) if fresh else {}
            rejected = []
            for match_id, (i, match, _) in list(candidates.items()):
                refusal = next((v for v in verdicts.get(i, []) if v.action == "reject"), None)
                if refusal is not None:
                    outcomes[i] = MatchOutcome(match_id, "rejected", error=RuleRejected(refusal.reason))
                    rejected.append((match, refusal))
                    del candidates[match_id]
            holding = {
                m.match_id for i, m, _ in candidates.values() if any(v.action == "hold" for v in verdicts.get(i, []))
            }
            inserted = _matches_insert(game, server_key, list(candidates.values()), holding)
            known = _matches_existing(game, [mid for mid in candidates if mid not in inserted])
            new_matches, held = [], []
            for match_id, (i, match, digest) in candidates.items():
                if match_id in inserted:
                    status = "held" if match_id in holding else "accepted"
                    outcomes[i] = MatchOutcome(match_id, status)
                    new_matches.append((inserted[match_id], match))
                    if status == "held":
                        held.append((inserted[match_id], match_id, verdicts[i]))
                else:
                    outcomes[i] = _repeat_outcome(match_id, digest, known[match_id])
            if new_matches:
                missed = _results_store(config, new_matches, now, held={pk for pk, _, _ in held})
                for match_id, (i, _, _) in candidates.items():
                    if match_id in inserted:
                        outcomes[i].missed_windows = missed.get(inserted[match_id], [])
                accepted = [pk for pk, _ in new_matches if pk not in {h[0] for h in held}]
                if accepted:
                    transaction.on_commit(lambda: matches_stored.send(sender=Game, game_id=game.id, match_pks=accepted))
            checks.verdicts_record(config, server_key, rejected=rejected, held=held)
        for i, match, digest in repeats:
            first = firsts[match.match_id]
            first_outcome = outcomes[first[0]]
            if first_outcome.error is not None and first_outcome.error.code == RuleRejected.code:
                outcomes[i] = MatchOutcome(match.match_id, "rejected", error=first_outcome.error)
                continue
            outcomes[i] = _repeat_outcome(match.match_id, digest, (first[2], first_outcome.status))
    return [o for o in outcomes if o is not None]


def _repeat_outcome(match_id: str, digest: str, stored: tuple[str, str]) -> MatchOutcome:
    stored_hash, stored_status = stored
    if stored_hash == digest and stored_status != "rejected":
        return MatchOutcome(match_id, stored_status, duplicate=True)
    return MatchOutcome(
        match_id,
        "rejected",
        error=MatchConflict(f"match_id {match_id!r} was already submitted with a different body"),
    )


def _matches_insert(
    game: Game, key: ServerKey | None, items: list[tuple[int, MatchIn, str]], holding: set[str]
) -> dict[str, int]:
    if not items:
        return {}
    items = sorted(items, key=lambda it: it[1].match_id)  # one lock order for concurrent batches
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO scores_match (game_id, match_id, ended_at, body_hash, status, server_key_id, received_at)
            SELECT %s, u.match_id, u.ended_at, u.body_hash, u.status, %s, now()
            FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::text[])
                WITH ORDINALITY AS u(match_id, ended_at, body_hash, status, n)
            ORDER BY u.n
            ON CONFLICT (game_id, match_id) DO NOTHING
            RETURNING match_id, id
            """,
            [
                game.id,
                key.id if key else None,
                pgarrays.texts(m.match_id for _, m, _ in items),
                pgarrays.timestamps(m.ended_at for _, m, _ in items),
                pgarrays.texts(d for _, _, d in items),
                pgarrays.texts("held" if m.match_id in holding else "accepted" for _, m, _ in items),
            ],
        )
        return dict(cur.fetchall())


def _matches_existing(game: Game, match_ids: list[str]) -> dict[str, tuple[str, str]]:
    if not match_ids:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            "SELECT match_id, body_hash, status FROM scores_match WHERE game_id = %s AND match_id = ANY(%s::text[])",
            [game.id, pgarrays.texts(match_ids)],
        )
        return {mid: (digest, status) for mid, digest, status in cur.fetchall()}


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


def _display_names(matches: list[tuple[int, MatchIn]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for _, match in matches:
        for r in match.results:
            if r.display_name:
                names[r.player] = r.display_name
            else:
                names.setdefault(r.player, "")
    return names


def _results_store(
    config: GameConfig, matches: list[tuple[int, MatchIn]], now: datetime, held: set[int] = frozenset()
) -> dict[int, list[str]]:
    """Store results, and the values of those not held; return, per match pk, the frozen
    windows it missed. Held results are stored but touch no value until approved."""
    player_ids = _players_upsert(config.game, _display_names(matches))
    if config.regions:
        _region_claims_store(config, matches, player_ids)
    boards = config.boards
    pairs = [(match_pk, r) for match_pk, match in matches for r in match.results]
    with connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO scores_result (match_id, player_id, board_id, score, metadata)
            SELECT u.match_id, u.player_id, u.board_id, u.score, u.metadata::jsonb
            FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[], %s::text[])
                AS u(match_id, player_id, board_id, score, metadata)
            """,
            [
                pgarrays.ints(pk for pk, _ in pairs),
                pgarrays.ints(player_ids[r.player] for _, r in pairs),
                pgarrays.ints(boards[r.board].id for _, r in pairs),
                pgarrays.ints(r.score for _, r in pairs),
                pgarrays.texts(None if r.metadata is None else json.dumps(r.metadata) for _, r in pairs),
            ],
        )
    return _values_apply(config, [(pk, m) for pk, m in matches if pk not in held], player_ids, now)


def _values_apply(
    config: GameConfig, matches: list[tuple[int, MatchIn]], player_ids: dict[str, int], now: datetime
) -> dict[int, list[str]]:
    """Count matches in their players' values (the conditional upserts), record the changes in
    the outbox and mirror them after commit. Shared by ingest and a moderator's approval, so an
    approved match counts exactly as if it had been accepted on arrival (frozen windows
    excepted, as for a late result). Returns, per match pk, the frozen windows it missed."""
    if not matches:
        return {}
    # A batch's matches share few end instants: derive each (instant, board, region)'s windows once.
    counted: dict[tuple[datetime, str, str | None], list[str]] = {}
    for _, match in matches:
        for r in match.results:
            key = (match.ended_at, r.board, r.region)
            if key not in counted:
                counted[key] = _windows_of(config, match, r)
    frozen = _frozen({(config.boards[b].id, w) for (_, b, _), ws in counted.items() for w in ws}, config, now)
    missed: dict[int, list[str]] = {}
    # (board_id, window, player_id) -> aggregated value of this request
    values: dict[tuple[int, str, int], _Value] = {}
    for match_pk, match in matches:
        for r in match.results:
            board = config.boards[r.board]
            player = player_ids[r.player]
            encoded = None if board.mode == Board.Mode.TOTAL else encoding.encode(board, r.score, match.ended_at)
            for window in counted[(match.ended_at, r.board, r.region)]:
                if frozen and (board.id, window) in frozen:
                    missed.setdefault(match_pk, []).append(window)
                else:
                    _merge(values, board, (board.id, window, player), r, match.ended_at, encoded)
    changed = _values_upsert(config, values)
    if changed:
        outbox_id = _outbox_insert(outbox_entries((b, w, p) for b, w, p, _ in changed))
        transaction.on_commit(lambda: score_accepted.send(sender=BoardOutbox, outbox_id=outbox_id, entries=changed))
    return {pk: sorted(set(ws)) for pk, ws in missed.items()}


def _outbox_insert(entries: list[list]) -> int:
    # what BoardOutbox.objects.create() does, without the ORM's per-call work on the hot path
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO scores_boardoutbox (created_at, entries, rewrite) VALUES (clock_timestamp(), %s::jsonb, false) "
            "RETURNING id",
            [json.dumps(entries, separators=(",", ":"))],
        )
        return cur.fetchone()[0]


def outbox_entries(refs: Iterable[tuple[int, str, int]]) -> list[list]:
    """The outbox row's entries: player ids grouped per (board, window), see BoardOutbox."""
    grouped: dict[tuple[int, str], list[int]] = defaultdict(list)
    for board_id, window, player_id in refs:
        grouped[(board_id, window)].append(player_id)
    return [[b, w, players] for (b, w), players in grouped.items()]


def _windows_of(config: GameConfig, match: MatchIn, r: ResultIn) -> list[str]:
    """The global windows of a result, and its region's on a regional board."""
    board = config.boards[r.board]
    found = windows_for(match.ended_at, config.game.reset_timezone, board.windows, config.seasons)
    if board.regions and r.region is not None:
        tz = config.regions[r.region].timezone
        found += [in_region(r.region, w) for w in windows_for(match.ended_at, tz, board.windows, config.seasons)]
    return found


def _frozen(pairs: set[tuple[int, str]], config: GameConfig, now: datetime) -> set[tuple[int, str]]:
    """Which of these board windows are frozen. Only windows that have ended can be, so the
    usual submission (for windows still open) costs no query."""
    ended = set()
    for board_id, window in pairs:
        span = bounds(window, config.timezone_of(window), config.seasons)
        if span is not None and span[1] <= now:
            ended.add((board_id, window))
    return frozen_windows(ended) if ended else set()


def _merge(
    values: dict, board: Board, key: tuple[int, str, int], r: ResultIn, ended_at: datetime, encoded: int | None
) -> None:
    """Fold one result into the request's value for a (board, window, player); `encoded` is
    the result's own encoded score on a best board (the same in every window)."""
    current = values.get(key)
    if board.mode == Board.Mode.TOTAL:
        if current is None:
            values[key] = _Value(r.score, ended_at, 0, r.metadata, ended_at)
            return
        current.reached_at = total_reached_at(current.value, current.reached_at, r.score, ended_at)
        current.value += r.score
        if ended_at >= current.latest_at:
            current.metadata, current.latest_at = r.metadata, ended_at
        return
    if current is None or encoded > current.encoded:
        values[key] = _Value(r.score, ended_at, encoded, r.metadata, ended_at)


def total_reached_at(value_a: int, at_a: datetime, value_b: int, at_b: datetime) -> datetime:
    """When a total made of two parts was reached: the latest part that added something
    (adding 0 does not move a player down); if neither added anything, the earliest."""
    if value_a > 0 and value_b > 0:
        return max(at_a, at_b)
    if value_a > 0:
        return at_a
    if value_b > 0:
        return at_b
    return min(at_a, at_b)


# Both upserts insert a request's pre-aggregated values in one statement, in a fixed order
# (concurrent requests lock rows in the same order), and differ in how they merge.
_UPSERT_HEAD = """
INSERT INTO scores_playervalue AS pv
    (board_id, "window", player_id, value, reached_at, encoded, metadata, latest_at, updated_at)
SELECT %(board)s, u.w, u.p, u.v, u.r, u.e, u.m::jsonb, u.l, clock_timestamp()
FROM unnest(%(w)s::text[], %(p)s::bigint[], %(v)s::bigint[], %(r)s::timestamptz[], %(e)s::bigint[], %(m)s::text[],
            %(l)s::timestamptz[])
    WITH ORDINALITY AS u(w, p, v, r, e, m, l, n)
ORDER BY u.n
ON CONFLICT (board_id, "window", player_id) DO UPDATE SET
"""

_BEST_UPSERT = (
    _UPSERT_HEAD
    + """
    value = EXCLUDED.value, reached_at = EXCLUDED.reached_at, encoded = EXCLUDED.encoded,
    metadata = EXCLUDED.metadata, latest_at = EXCLUDED.latest_at, updated_at = clock_timestamp()
WHERE EXCLUDED.encoded > pv.encoded
RETURNING pv."window", pv.player_id, pv.encoded
"""
)

# reached_at of a new total, by total_reached_at()'s rule.
_TOTAL_REACHED = """CASE
        WHEN pv.value > 0 AND EXCLUDED.value > 0 THEN GREATEST(pv.reached_at, EXCLUDED.reached_at)
        WHEN pv.value > 0 THEN pv.reached_at
        WHEN EXCLUDED.value > 0 THEN EXCLUDED.reached_at
        ELSE LEAST(pv.reached_at, EXCLUDED.reached_at) END"""

# The encoded score of a total is recomputed in SQL from the summed value, so concurrent
# additions for one player serialise on the row and none is lost.
_TOTAL_UPSERT = (
    _UPSERT_HEAD
    + f"""
    value = pv.value + EXCLUDED.value,
    reached_at = {_TOTAL_REACHED},
    encoded = LEAST(pv.value + EXCLUDED.value, %(cap)s) * %(span)s + (%(span)s - 1 - LEAST(GREATEST(
        floor(extract(epoch FROM {_TOTAL_REACHED}))::bigint - %(epoch)s, 0), %(span)s - 1)),
    metadata = CASE WHEN EXCLUDED.latest_at >= pv.latest_at THEN EXCLUDED.metadata ELSE pv.metadata END,
    latest_at = GREATEST(pv.latest_at, EXCLUDED.latest_at),
    updated_at = clock_timestamp()
RETURNING pv."window", pv.player_id, pv.encoded
"""
)


def _values_upsert(config: GameConfig, values: dict[tuple[int, str, int], _Value]) -> list[tuple[int, str, int, int]]:
    """Apply aggregated contributions; return (board_id, window, player_id, encoded) of every
    value that changed."""
    by_board: dict[int, list[tuple[str, int, _Value]]] = {}
    for (board_id, window, player_id), v in sorted(values.items(), key=lambda kv: kv[0]):
        by_board.setdefault(board_id, []).append((window, player_id, v))
    boards = {b.id: b for b in config.boards.values()}
    changed: list[tuple[int, str, int, int]] = []
    with connection.cursor() as cur:
        for board_id, items in by_board.items():
            board = boards[board_id]
            total = board.mode == Board.Mode.TOTAL
            params = {
                "board": board_id,
                "w": pgarrays.texts(w for w, _, _ in items),
                "p": pgarrays.ints(p for _, p, _ in items),
                "v": pgarrays.ints(v.value for _, _, v in items),
                "r": pgarrays.timestamps(v.reached_at for _, _, v in items),
                "e": pgarrays.ints(
                    encoding.encode(board, v.value, v.reached_at) if total else v.encoded for _, _, v in items
                ),
                "m": pgarrays.texts(json.dumps(v.metadata) if v.metadata is not None else None for _, _, v in items),
                "l": pgarrays.timestamps(v.latest_at for _, _, v in items),
            }
            if total:
                params.update(cap=encoding.value_span(board) - 1, span=encoding.TIME_SPAN, epoch=encoding.EPOCH_UNIX)
                cur.execute(_TOTAL_UPSERT, params)
            else:
                cur.execute(_BEST_UPSERT, params)
            changed.extend((board_id, w, p, e) for w, p, e in cur.fetchall())
    return changed


# --- moderation: re-applying and recomputing values (anticheat/ calls these) ------------------

Ref = tuple[int, str, int]  # board_id, window, player_id


def stored_matches_load(config: GameConfig, match_pks: Sequence[int]) -> list[tuple[int, MatchIn, dict[str, int]]]:
    """Stored matches as ingest saw them: (pk, match, {player external id: pk}); each result's
    region is the one its player held for the season (fixed per season, so the same)."""
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT m.id, m.match_id, m.ended_at, p.id, p.external_id, b.slug, r.score, r.metadata::text
            FROM scores_match m
            JOIN scores_result r ON r.match_id = m.id
            JOIN scores_player p ON p.id = r.player_id
            JOIN scores_board b ON b.id = r.board_id
            WHERE m.id = ANY(%s) ORDER BY m.id, r.id
            """,
            [list(match_pks)],
        )
        rows = cur.fetchall()
    grouped: dict[int, tuple[str, datetime, list[ResultIn], dict[str, int]]] = {}
    for pk, match_id, ended_at, player_pk, player, board, score, metadata in rows:
        entry = grouped.setdefault(pk, (match_id, ended_at, [], {}))
        entry[2].append(ResultIn(player, board, score, metadata=json.loads(metadata) if metadata else None))
        entry[3][player] = player_pk
    matches = [(pk, MatchIn(mid, at, tuple(results)), ids) for pk, (mid, at, results, ids) in grouped.items()]
    claims = _region_claims_load(config, [m for _, m, _ in matches])
    out = []
    for pk, match, ids in matches:
        season = _claim_seasons(config, match.ended_at)[0]
        results = tuple(dataclasses.replace(r, region=claims.get((r.player, season))) for r in match.results)
        out.append((pk, dataclasses.replace(match, results=results), ids))
    return out


def matches_values_apply(config: GameConfig, match_pks: Sequence[int], now: datetime | None = None) -> None:
    """Count stored (held, now approved) matches in their players' values exactly as ingest
    would have. The caller owns the transaction and has set the matches' status."""
    loaded = stored_matches_load(config, match_pks)
    ids = {name: pk for _, _, players in loaded for name, pk in players.items()}
    _values_apply(config, [(pk, m) for pk, m, _ in loaded], ids, now or timezone.now())


def matches_refs(config: GameConfig, match_pks: Sequence[int]) -> set[Ref]:
    """Every (board, window, player) value these matches counted in (or would have)."""
    refs: set[Ref] = set()
    for _, match, players in stored_matches_load(config, match_pks):
        for r in match.results:
            board_id = config.boards[r.board].id
            refs.update((board_id, w, players[r.player]) for w in _windows_of(config, match, r))
    return refs


_LOCK_VALUES = """
SELECT pv.id FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS u(w, p, n)
JOIN scores_playervalue pv ON pv.board_id = %s AND pv."window" = u.w AND pv.player_id = u.p
ORDER BY u.n FOR UPDATE OF pv
"""

# Candidates of one value: the player's accepted results on the board inside the window's
# bounds (NULL: unbounded), received before the window was first frozen (a late result never
# counted in a frozen window). Reads go through the (player, board) index.
_CANDIDATES = """
FROM unnest(%(w)s::text[], %(p)s::bigint[], %(s)s::timestamptz[], %(e)s::timestamptz[], %(c)s::timestamptz[])
    WITH ORDINALITY AS u(w, p, s, e, c, n)
JOIN scores_result r ON r.player_id = u.p AND r.board_id = %(board)s
JOIN scores_match m ON m.id = r.match_id AND m.status = 'accepted'
    AND (u.s IS NULL OR m.ended_at >= u.s) AND (u.e IS NULL OR m.ended_at < u.e)
    AND (u.c IS NULL OR m.received_at < u.c)
"""

_BEST_RECOMPUTE = (
    """
SELECT DISTINCT ON (u.n) u.w, u.p, r.score, m.ended_at, r.metadata::text, m.ended_at,
    (%(part)s) * %(span)s + (%(span)s - 1 - LEAST(GREATEST(
        floor(extract(epoch FROM m.ended_at))::bigint - %(epoch)s, 0), %(span)s - 1)) AS enc
"""
    + _CANDIDATES
    + "ORDER BY u.n, enc DESC, m.id"
)

# reached_at by total_reached_at()'s rule folded over every part: the latest part that added
# something, else the earliest; metadata of the latest part (ties: the last stored).
_TOTAL_RECOMPUTE = (
    """
SELECT u.w, u.p, SUM(r.score)::bigint, COALESCE(MAX(m.ended_at) FILTER (WHERE r.score > 0), MIN(m.ended_at)),
    (array_agg(r.metadata::text ORDER BY m.ended_at DESC, m.id DESC))[1], MAX(m.ended_at)
"""
    + _CANDIDATES
    + "GROUP BY u.n, u.w, u.p ORDER BY u.n"
)


def values_recompute(config: GameConfig, refs: set[Ref], *, reason: str) -> list[Ref]:
    """Recompute values from the players' remaining accepted matches (after a void or a hold),
    in SQL: best = the largest encoded result in the window, total = the sum. Rows with nothing
    left are deleted. Rows are locked first, in the ingest's order, so a concurrent ingest
    either committed before (and is counted) or waits and adds to the recomputed value.

    The caller owns the transaction. After commit, boards/ rewrites these entries with absolute
    writes (they may go down); an outbox row makes the periodic drain rewrite them once more."""
    by_board: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for board_id, window, player_id in sorted(refs):
        by_board[board_id].append((window, player_id))
    boards = {b.id: b for b in config.boards.values()}
    first_frozen = _first_frozen(refs)
    touched: list[Ref] = []
    with connection.cursor() as cur:
        for board_id, items in by_board.items():
            board = boards[board_id]
            cur.execute(_LOCK_VALUES, [[w for w, _ in items], [p for _, p in items], board_id])
            spans = [bounds(w, config.timezone_of(w), config.seasons) or (None, None) for w, _ in items]
            params = {
                "board": board_id,
                "w": [w for w, _ in items],
                "p": [p for _, p in items],
                "s": [s for s, _ in spans],
                "e": [e for _, e in spans],
                "c": [first_frozen.get((board_id, w)) for w, _ in items],
                "span": encoding.TIME_SPAN,
                "epoch": encoding.EPOCH_UNIX,
            }
            if board.mode == Board.Mode.TOTAL:
                cur.execute(_TOTAL_RECOMPUTE, params)
                found = [
                    (w, p, v, reached, meta, latest, encoding.encode(board, v, reached))
                    for w, p, v, reached, meta, latest in cur.fetchall()
                ]
            else:
                part = "r.score - %(min)s" if board.order == Board.Order.DESC else "%(max)s - r.score"
                cur.execute(
                    _BEST_RECOMPUTE.replace("%(part)s", part),
                    {**params, "min": board.min_score, "max": board.max_score},
                )
                found = cur.fetchall()
            # update the rows that exist (a value never appears here that ingest did not count)
            cur.execute(
                """
                UPDATE scores_playervalue pv SET value = u.v, reached_at = u.r, encoded = u.e, metadata = u.m::jsonb,
                    latest_at = u.l, updated_at = clock_timestamp()
                FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::timestamptz[], %s::bigint[], %s::text[],
                            %s::timestamptz[]) AS u(w, p, v, r, e, m, l)
                WHERE pv.board_id = %s AND pv."window" = u.w AND pv.player_id = u.p
                """,
                [
                    [f[0] for f in found],
                    [f[1] for f in found],
                    [f[2] for f in found],
                    [f[3] for f in found],
                    [f[6] for f in found],
                    [f[4] for f in found],
                    [f[5] for f in found],
                    board_id,
                ],
            )
            remaining = {(f[0], f[1]) for f in found}
            gone = [(w, p) for w, p in items if (w, p) not in remaining]
            if gone:
                cur.execute(
                    """
                    DELETE FROM scores_playervalue pv USING unnest(%s::text[], %s::bigint[]) AS u(w, p)
                    WHERE pv.board_id = %s AND pv."window" = u.w AND pv.player_id = u.p
                    """,
                    [[w for w, _ in gone], [p for _, p in gone], board_id],
                )
            touched.extend((board_id, w, p) for w, p in items)
    if touched:
        outbox = BoardOutbox.objects.create(entries=outbox_entries(touched), rewrite=True)
        transaction.on_commit(
            lambda: values_rewritten.send(sender=BoardOutbox, outbox_id=outbox.id, refs=touched, reason=reason)
        )
    return touched


def _first_frozen(refs: set[Ref]) -> dict[tuple[int, str], datetime]:
    pairs = sorted({(b, w) for b, w, _ in refs})
    if not pairs:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT f.board_id, f."window", MIN(f.frozen_at)
            FROM unnest(%s::bigint[], %s::text[]) AS u(b, w)
            JOIN seasons_windowfreeze f ON f.board_id = u.b AND f."window" = u.w
            GROUP BY f.board_id, f."window"
            """,
            [[b for b, _ in pairs], [w for _, w in pairs]],
        )
        return {(b, w): at for b, w, at in cur.fetchall()}


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
        b.min_score if (b.mode == "best" and b.order == "desc") else None,
        b.max_score if (b.mode == "best" and b.order == "asc") else None,
        encoding.value_span(b) if b.mode == "total" else None,
    )


def game_config_apply(spec: GameSpec) -> list[str]:
    """Create or update a game, its boards and seasons from a parsed file.

    Returns a line per change (empty when the file changes nothing). Refuses, naming the key,
    a change that would invalidate the encoded scores a board already holds."""
    changes: list[str] = []
    with transaction.atomic():
        game_fields = {
            "name": spec.name,
            "reset_timezone": spec.reset_timezone,
            "close_grace_seconds": spec.close_grace_seconds,
            "retention_periods": spec.retention_periods,
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
            }
            board = existing.get(bs.slug)
            if board is None:
                Board.objects.create(game=game, slug=bs.slug, **fields)
                changes.append(f"created board {bs.slug}")
                continue
            if _encoding_shape(board) != _encoding_shape(bs) and PlayerValue.objects.filter(board=board).exists():
                raise ConfigError(
                    f"boards[{i}]",
                    f"board {bs.slug!r} already holds scores; changing its order, mode or score range would "
                    "change how they rank. Create a new board instead.",
                )
            changes += _update_fields(board, fields, f"board {bs.slug}")
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
    """A bearer token with which the game client reads as this player (contract section 7)."""
    expires_at = timezone.now() + timedelta(seconds=settings.PLAYER_TOKEN_TTL_SECONDS)
    return make_player_token(player.game_id, player.pk, expires_at), expires_at


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
            transaction.on_commit(lambda: friends_changed.send(sender=Friendship, player_ids=touched))
    return wanted
