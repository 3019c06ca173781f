"""The request side of ingest: decide what a submission is, and make it durable in one statement.

A submission (one match, or a batch of up to 1000) costs, on the usual path:

    BEGIN
    the append statement: upsert the players (ON CONFLICT DO NOTHING), insert the matches
        (ON CONFLICT (game, match_id) DO NOTHING), insert the results of the new ones, queue them
        for the projector (scores_pending); return what was new, what was
        stored before, the players' ids and their current all-time values
    the synchronous anti-cheat rules on the new matches (anticheat/ registers them): one Redis
        round trip for the rate counters; rejects are deleted again, holds marked, both audited
    COMMIT                                   synchronous_commit stays on: a 2xx is on disk
    NOTIFY the projector                     its own transaction, after the commit (see _wake)

Values, boards, live pushes and the after-the-fact checks follow in the projector
(scores/projection/), in batches. Nothing here touches scores_playervalue or Redis directly.

- Idempotency is the unique constraint on (game, match_id): the insert decides, never a prior
  read. A match stored before is a duplicate (same canonical body: 200) or a conflict (409); a
  match repeated inside one batch is judged against its first copy.
- The statement takes the game's ingest lock shared and stamps received_at after taking it, so
  a window's cutoff divides matches exactly (scores/locks.py, scores/cutoffs.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from leaderboard_project.errors import ApiError, Conflict
from scores import locks, pgarrays
from scores.models import Game, ServerKey
from scores.projection.batch import PARTITIONS
from scores.projection.values import result_windows
from scores.selectors import GameConfig, game_config
from scores.sql import fetch_prepared
from scores.windows import claim_seasons

NOTIFY_CHANNEL = "lb_projector"


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


# --- the synchronous checks: registered by anticheat/ in its AppConfig.ready() ---------------


class Verdict(Protocol):
    action: str  # reject | hold
    reason: str


class SubmissionChecks(Protocol):
    """What ingest asks of the anti-cheat rules (anticheat/checks.py implements it)."""

    def history_boards(self, config: GameConfig) -> set[int]:
        """Boards whose players' current all-time values the rules read (the append returns them)."""
        ...

    def judge(
        self,
        *,
        config: GameConfig,
        server_key: ServerKey | None,
        matches: dict[int, MatchIn],
        history: dict[tuple[int, str], int],
        now: datetime,
    ) -> dict[int, list[Verdict]]:
        """Per request index of a new match, what the rules say (absent: accepted as it is)."""
        ...

    def record(
        self,
        *,
        config: GameConfig,
        server_key: ServerKey | None,
        rejected: Sequence[tuple[MatchIn, Verdict]],
        held: Sequence[tuple[int, str, list[Verdict]]],
    ) -> None:
        """Audit rejections and flag held matches, inside the submission's transaction."""
        ...


_registered: dict[str, SubmissionChecks] = {}
_checks: list[SubmissionChecks] = []


def submission_checks_register(checks: SubmissionChecks, *, uid: str) -> None:
    """Called by an app's ready(): its rules judge every new match from then on. `uid` makes
    registering twice harmless, as dispatch_uid does for signals."""
    _registered[uid] = checks
    _checks[:] = list(_registered.values())


# --- submitting ------------------------------------------------------------------------------


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
        for attempt in range(2):
            try:
                with transaction.atomic():
                    _store(config, server_key, candidates, outcomes, now)
                break
            except _PlayerRace:
                if attempt:
                    raise
    for i, match, digest in repeats:
        first = firsts[match.match_id]
        first_outcome = outcomes[first[0]]
        if first_outcome.error is not None and first_outcome.error.code == RuleRejected.code:
            outcomes[i] = MatchOutcome(match.match_id, "rejected", error=first_outcome.error)
            continue
        outcomes[i] = _repeat_outcome(match.match_id, digest, (first[2], first_outcome.status))
    return [o for o in outcomes if o is not None]


class _PlayerRace(Exception):
    """A player the statement needed was created by a concurrent request that committed after
    the statement's snapshot: neither inserted nor seen. Rare; the whole store runs again."""


def _store(
    config: GameConfig,
    server_key: ServerKey | None,
    candidates: dict[str, tuple[int, MatchIn, str]],
    outcomes: list[MatchOutcome | None],
    now: datetime,
) -> None:
    """The transaction: append, judge the new matches, settle rejects and holds."""
    items = sorted(candidates.values(), key=lambda it: it[1].match_id)  # one lock order for all
    history_boards = set().union(*(c.history_boards(config) for c in _checks)) if _checks else set()
    appended = _append(config, server_key, items, history_boards)
    stored = appended.old
    missing = [mid for mid in candidates if mid not in appended.new and mid not in stored]
    if missing:  # inserted by a request that committed after the statement's snapshot
        stored.update(_matches_existing(config.game.id, missing))
    fresh = {i: m for mid, (i, m, _) in candidates.items() if mid in appended.new}
    verdicts = _judge(config, server_key, fresh, appended.history, now)
    rejected, held, kept = [], [], []
    for match_id, (i, match, digest) in candidates.items():
        if match_id not in appended.new:
            outcomes[i] = _repeat_outcome(match_id, digest, stored[match_id])
            continue
        mine = verdicts.get(i, [])
        refusal = next((v for v in mine if v.action == "reject"), None)
        if refusal is not None:
            outcomes[i] = MatchOutcome(match_id, "rejected", error=RuleRejected(refusal.reason))
            rejected.append((match, refusal))
            continue
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
    if rejected:
        _matches_delete([appended.new[m.match_id] for m, _ in rejected])
    if held:
        _matches_hold([pk for pk, _, _ in held])
    if config.regions:
        _region_claims_store(config, kept, appended.players)
    for checks in _checks:
        checks.record(config=config, server_key=server_key, rejected=rejected, held=held)
    if appended.new:
        if settings.PROJECTOR_INLINE:
            from scores.projection import pending_apply

            transaction.on_commit(pending_apply)
        else:
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


def _judge(
    config: GameConfig,
    server_key: ServerKey | None,
    fresh: dict[int, MatchIn],
    history: dict[tuple[int, str], int],
    now: datetime,
) -> dict[int, list[Verdict]]:
    """Every registered rule set's verdicts on the new matches (rules judge new matches only:
    a retry of a stored match is answered from what was stored, never rejected or held anew)."""
    verdicts: dict[int, list[Verdict]] = {}
    if fresh:
        for checks in _checks:
            found = checks.judge(config=config, server_key=server_key, matches=fresh, history=history, now=now)
            for i, vs in found.items():
                verdicts.setdefault(i, []).extend(vs)
    return verdicts


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


def _windows_of(config: GameConfig, items: list[tuple[int, MatchIn, str]]) -> dict[str, set[tuple[int, str]]]:
    """match_id -> the (board, window)s its results count in; derived once per (instant, board,
    region), which a batch's matches share."""
    derived: dict[tuple[datetime, str, str | None], list[tuple[int, str]]] = {}
    out: dict[str, set[tuple[int, str]]] = {}
    for _, match, _ in items:
        pairs = out[match.match_id] = set()
        for r in match.results:
            key = (match.ended_at, r.board, r.region)
            if key not in derived:
                board = config.boards[r.board]
                derived[key] = [(board.id, w) for w in result_windows(config, board, match.ended_at, r.region)]
            pairs.update(derived[key])
    return out


# --- the append statement --------------------------------------------------------------------


@dataclass
class _Appended:
    new: dict[str, int]  # match_id -> pk, inserted by this statement
    old: dict[str, tuple[str, str]]  # match_id -> (body_hash, status), stored before it
    players: dict[str, int]  # external id -> pk
    history: dict[tuple[int, str], int]  # (board_id, external player id) -> encoded all-time value
    windows: dict[str, set[tuple[int, str]]]  # match_id -> the (board, window)s it counts in
    cutoffs: set[tuple[int, str]]  # those of them that stopped taking results (frozen)


# One statement, in this order of effect: the shared ingest lock, then the stamp; players that
# are new; matches that are new; their results; one pending row per projector partition they
# touch. Its one row of arrays answers everything the request
# still has to decide. A result whose player is neither inserted nor visible (created by a
# request that committed after this statement's snapshot) gets a NULL player and fails the
# NOT NULL constraint: see _PlayerRace.
_APPEND = """
WITH lk AS (SELECT pg_advisory_xact_lock_shared(%(lock_ns)s, %(game)s::int) AS locked),
stamp AS (SELECT clock_timestamp() AS at FROM lk),
new_players AS (
    INSERT INTO scores_player (game_id, external_id, display_name, created_at)
    SELECT %(game)s, u.p, u.name, now() FROM unnest(%(p)s::text[], %(pn)s::text[]) AS u(p, name)
    ORDER BY u.p
    ON CONFLICT (game_id, external_id) DO NOTHING
    RETURNING external_id, id
),
players AS (
    SELECT external_id, id FROM new_players
    UNION ALL
    SELECT external_id, id FROM scores_player WHERE game_id = %(game)s AND external_id = ANY(%(p)s::text[])
),
new_matches AS (
    INSERT INTO scores_match (game_id, match_id, ended_at, body_hash, status, server_key_id, received_at)
    SELECT %(game)s, u.m, u.e, u.h, 'accepted', %(key)s, (SELECT at FROM stamp)
    FROM unnest(%(m)s::text[], %(e)s::timestamptz[], %(h)s::text[]) WITH ORDINALITY AS u(m, e, h, n)
    ORDER BY u.n
    ON CONFLICT (game_id, match_id) DO NOTHING
    RETURNING id, match_id, ended_at
),
new_results AS (
    INSERT INTO scores_result (match_id, player_id, board_id, score, metadata, display_name, ended_at)
    SELECT m.id, p.id, u.b, u.s, u.md::jsonb, u.dn, m.ended_at
    FROM unnest(%(rm)s::text[], %(rp)s::text[], %(rb)s::bigint[], %(rs)s::bigint[], %(rmd)s::text[],
                %(rdn)s::text[]) WITH ORDINALITY AS u(m, p, b, s, md, dn, n)
    JOIN new_matches m ON m.match_id = u.m
    LEFT JOIN players p ON p.external_id = u.p
    ORDER BY u.n
    RETURNING match_id, player_id, board_id, ended_at
),
queued AS (
    INSERT INTO scores_pending (partition, match_pks, ended_from, ended_to, created_at)
    SELECT mod(player_id, %(parts)s), array_agg(DISTINCT match_id), min(ended_at), max(ended_at), clock_timestamp()
    FROM new_results GROUP BY 1
    RETURNING partition
),
old AS (
    SELECT x.match_id, x.body_hash, x.status FROM scores_match x
    WHERE x.game_id = %(game)s AND x.match_id = ANY(%(m)s::text[])
),
history AS (
    SELECT r.board_id, p.external_id, pv.encoded
    FROM (SELECT DISTINCT board_id, player_id FROM new_results WHERE board_id = ANY(%(hb)s::bigint[])) r
    JOIN scores_playervalue pv ON pv.board_id = r.board_id AND pv."window" = 'all' AND pv.player_id = r.player_id
    JOIN players p ON p.id = r.player_id
),
cuts AS (
    SELECT c.board_id, c."window" FROM unnest(%(cb)s::bigint[], %(cw)s::text[]) AS u(b, w)
    JOIN scores_windowcutoff c ON c.board_id = u.b AND c."window" = u.w
)
SELECT
    (SELECT array_agg(match_id) FROM new_matches), (SELECT array_agg(id) FROM new_matches),
    (SELECT array_agg(match_id) FROM old), (SELECT array_agg(body_hash) FROM old), (SELECT array_agg(status) FROM old),
    (SELECT array_agg(external_id) FROM players), (SELECT array_agg(id) FROM players),
    (SELECT array_agg(board_id) FROM history), (SELECT array_agg(external_id) FROM history),
    (SELECT array_agg(encoded) FROM history),
    (SELECT array_agg(board_id) FROM cuts), (SELECT array_agg("window") FROM cuts),
    (SELECT count(*) FROM queued)
"""


def _append(
    config: GameConfig, server_key: ServerKey | None, items: list[tuple[int, MatchIn, str]], history_boards: set[int]
) -> _Appended:
    boards = config.boards
    names: dict[str, str] = {}
    results = []
    for _, match, _ in items:
        for r in match.results:
            results.append((match.match_id, r))
            if r.display_name:
                names[r.player] = r.display_name
            else:
                names.setdefault(r.player, "")
    players = sorted(names)
    windows = _windows_of(config, items)
    pairs = sorted(set().union(*windows.values()))
    params = {
        "lock_ns": locks.INGEST,
        "game": config.game.id,
        "key": server_key.id if server_key else None,
        "p": pgarrays.texts(players),
        "pn": pgarrays.texts(names[p] for p in players),
        "m": pgarrays.texts(m.match_id for _, m, _ in items),
        "e": pgarrays.timestamps(m.ended_at for _, m, _ in items),
        "h": pgarrays.texts(d for _, _, d in items),
        "rm": pgarrays.texts(mid for mid, _ in results),
        "rp": pgarrays.texts(r.player for _, r in results),
        "rb": pgarrays.ints(boards[r.board].id for _, r in results),
        "rs": pgarrays.ints(r.score for _, r in results),
        "rmd": pgarrays.texts(None if r.metadata is None else json.dumps(r.metadata) for _, r in results),
        "rdn": pgarrays.texts(r.display_name for _, r in results),
        "parts": PARTITIONS,
        "hb": pgarrays.ints(sorted(history_boards)),
        "cb": pgarrays.ints(b for b, _ in pairs),
        "cw": pgarrays.texts(w for _, w in pairs),
    }
    try:
        # no savepoint of its own: a failure here fails the whole submission's transaction
        (row,) = fetch_prepared(_APPEND, params)
    except IntegrityError as exc:
        if "player_id" in str(exc):
            raise _PlayerRace from exc
        raise
    new_ids, new_pks, old_ids, old_hashes, old_status, p_ids, p_pks, h_boards, h_players, h_values, c_b, c_w, _ = (
        v or [] for v in row
    )
    return _Appended(
        new=dict(zip(new_ids, new_pks, strict=True)),
        old={mid: (digest, status) for mid, digest, status in zip(old_ids, old_hashes, old_status, strict=True)},
        players=dict(zip(p_ids, p_pks, strict=True)),
        history={(b, p): e for b, p, e in zip(h_boards, h_players, h_values, strict=True)},
        windows=windows,
        cutoffs=set(zip(c_b, c_w, strict=True)),
    )


def _matches_existing(game_id: int, match_ids: list[str]) -> dict[str, tuple[str, str]]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT match_id, body_hash, status FROM scores_match WHERE game_id = %s AND match_id = ANY(%s::text[])",
            [game_id, pgarrays.texts(match_ids)],
        )
        return {mid: (digest, status) for mid, digest, status in cur.fetchall()}


def _matches_delete(match_pks: list[int]) -> None:
    """Take back matches a rule rejected after the append stored them (their pending rows stay:
    the projector finds nothing of them)."""
    with connection.cursor() as cur:
        cur.execute("DELETE FROM scores_result WHERE match_id = ANY(%s::bigint[])", [pgarrays.ints(match_pks)])
        cur.execute("DELETE FROM scores_match WHERE id = ANY(%s::bigint[])", [pgarrays.ints(match_pks)])


def _matches_hold(match_pks: list[int]) -> None:
    """Held on arrival: not counted until approved (which stamps counts_from, see Match)."""
    with connection.cursor() as cur:
        cur.execute("UPDATE scores_match SET status = 'held' WHERE id = ANY(%s::bigint[])", [pgarrays.ints(match_pks)])


# --- regions ---------------------------------------------------------------------------------

ClaimKey = tuple[str, str | None]  # (player id, season slug or None outside seasons)


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
    seasons = claim_seasons(match.ended_at, config.seasons)
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


def _region_claims_store(config: GameConfig, matches: list[MatchIn], player_ids: dict[str, int]) -> None:
    """Record new (player, season) -> region claims. The unique constraint decides between
    two requests racing to set different regions: the loser is refused whole (409)."""
    wanted: dict[tuple[int, int | None], int] = {}
    for match in matches:
        for season in claim_seasons(match.ended_at, config.seasons):
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
