"""Folding a batch of results into values, set-based: one statement per batch.

The statement (FOLD below) claims the batch's pending rows and, in SQL:
1. reads their accepted results (the partitions of scores_result their ended_at spans);
2. expands each result into the windows it counts in: "all", daily, weekly, monthly in the
   game's reset time zone, the seasons it falls in, and on a regional board the same windows
   of the player's region (prefixed "eu/...", in the region's zone) - the rules of
   scores.windows.windows_for, which scores.windows.result_windows() spells in Python for the
   request side and moderation (tests/scores/test_windows_sql.py keeps the two equal);
3. drops the windows whose cutoff came before the match began to count (cutoffs.COUNTS_FROM);
4. aggregates per (board, window, player), as a statement cannot update a row twice: best
   boards keep the largest encoded score (the first such match on a tie), total boards sum
   (reached_at by total_reached_at()'s rule, the latest part's metadata), latest boards keep
   the most recent result (docs/encoding.md, "Values that fall");
5. upserts: best boards only where the new encoded score is larger (rows that would not
   change are filtered out first, so they are not even locked), totals add up, with the
   encoded score recomputed in SQL from the new sum, latest boards only where the new result
   is more recent than the stored one;
6. applies the latest display name each player was sent;
and returns every value that changed, for the outbox and the Redis mirror.

Rows are written in (board, window, player) order, so two writers cannot deadlock. Postgres
does the per-result work in C; Python only shapes what changed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from scores import encoding, events, pgarrays
from scores.cutoffs import COUNTS_FROM
from scores.locks import LANES
from scores.outbox import outbox_entries, outbox_insert
from scores.selectors import EncodedValue
from scores.send import send_on_commit
from scores.signals import score_accepted
from scores.sql import fetch_prepared


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


# The order a total that may fall is clamped in: when the results happened.
_SEQ = 'ORDER BY s.ended_at, s.match_ext COLLATE "C", s.result_id ROWS UNBOUNDED PRECEDING'
_LAST = 'ORDER BY ended_at DESC, match_ext COLLATE "C" DESC, result_id DESC'


def clamped_totals_sql(rows: str) -> str:
    """SQL of totals clamped at a floor, one row per (board_id, "window", player_id) of `rows`
    (a relation with those columns and score, ended_at, metadata, match_ext, result_id, x0: the
    total they continue (NULL: none), stored_reached: its reached_at, floor).

    Each result in turn: total = max(floor, total + score). Closed form (Lindley's recursion),
    so window functions compute it without a loop: after k results with running sums S_1..S_k,
    total_k = S_k + max(x0, floor - min(S_1..S_k)). The value was reached at the latest result
    that moved the total (adding 0, or subtracting at the floor, does not), else the stored
    moment, else the earliest result (total_reached_at()'s rule, in that order)."""
    seq = f'WINDOW seq AS (PARTITION BY s.board_id, s."window", s.player_id {_SEQ})'
    return f"""
    SELECT board_id, "window", player_id,
        (array_agg(y_k {_LAST}))[1] AS value,
        COALESCE(max(ended_at) FILTER (WHERE moved), min(stored_reached), min(ended_at)) AS reached_at,
        (array_agg(metadata {_LAST}))[1] AS metadata,
        max(ended_at) AS latest_at,
        (array_agg(match_ext {_LAST}))[1] AS latest_match,
        min(floor) AS floor
    FROM (
        SELECT s.*, s.y_k <> lag(s.y_k, 1, COALESCE(s.x0, 0)) OVER seq AS moved FROM (
            SELECT s.*, s.s_k + GREATEST(COALESCE(s.x0, 0), s.floor - min(s.s_k) OVER seq) AS y_k FROM (
                SELECT s.*, (sum(s.score) OVER seq)::bigint AS s_k FROM {rows} s {seq}
            ) s {seq}
        ) s {seq}
    ) e
    GROUP BY board_id, "window", player_id"""


# --- the statement -----------------------------------------------------------------------

# The zones a result's windows are derived in: the game's, and on a regional board the region
# the player holds for the first season the match falls in (no season: the off-season claim).
_ZONES = """
    SELECT ''::text AS prefix, g.reset_timezone AS tz
    UNION ALL
    SELECT rg.slug || '/', rg.timezone
    FROM scores_playerregion pr JOIN scores_region rg ON rg.id = pr.region_id
    WHERE b.regions AND pr.player_id = res.player_id AND pr.season_id IS NOT DISTINCT FROM (
        SELECT s.id FROM scores_season s
        WHERE s.game_id = g.id AND s.starts_at <= res.ended_at AND res.ended_at < s.ends_at
        ORDER BY s.starts_at, s.id LIMIT 1)
"""

# windows_for() in SQL: the kinds the board keeps, in the zone's local calendar (ISO weeks).
_WINDOWS = """
    SELECT 'all' WHERE 'all' = ANY(b.windows)
    UNION ALL SELECT 'daily:' || to_char(res.ended_at AT TIME ZONE z.tz, 'YYYY-MM-DD') WHERE 'daily' = ANY(b.windows)
    UNION ALL SELECT 'weekly:' || to_char(res.ended_at AT TIME ZONE z.tz, 'IYYY-"W"IW') WHERE 'weekly' = ANY(b.windows)
    UNION ALL SELECT 'monthly:' || to_char(res.ended_at AT TIME ZONE z.tz, 'YYYY-MM') WHERE 'monthly' = ANY(b.windows)
    UNION ALL SELECT 'season:' || s.slug FROM scores_season s
        WHERE 'season' = ANY(b.windows) AND s.game_id = g.id AND s.starts_at <= res.ended_at AND res.ended_at < s.ends_at
"""

# Value part of a best or latest board's result (encoding.value_part), per row's board: the
# score's part, then the result's stored sub-score digits (0 and a radix of 1 without any).
_BEST_PART = (
    "(CASE WHEN b.\"order\" = 'asc' THEN b.max_score - x.score ELSE x.score - b.min_score END) * ("
    + encoding.sql_subradix("b.subscores")
    + ") + x.subpart"
)
# The largest total a board tells apart (encoding.value_span - 1).
_TOTAL_CAP = f"COALESCE(b.max_total, {encoding.VALUE_SPAN_LIMIT - 1})"

# reached_at of a total merged with the row it lands on, by total_reached_at()'s rule.
_TOTAL_REACHED = """CASE
        WHEN pv.value > 0 AND EXCLUDED.value > 0 THEN GREATEST(pv.reached_at, EXCLUDED.reached_at)
        WHEN pv.value > 0 THEN pv.reached_at
        WHEN EXCLUDED.value > 0 THEN EXCLUDED.reached_at
        ELSE LEAST(pv.reached_at, EXCLUDED.reached_at) END"""

FOLD = f"""
WITH picked AS (
    -- the oldest pending rows of the lanes, whole, while the matches before each fit the
    -- batch (always the first); the caller holds the lanes' apply locks
    SELECT id FROM (
        SELECT id, sum(cardinality(match_pks)) OVER (ORDER BY id) - cardinality(match_pks) AS before
        FROM scores_pending WHERE lane = ANY(%(lanes)s::int[]) AND id <= %(upto)s ORDER BY id LIMIT 1000
    ) AS queue WHERE before < %(max)s
), claimed AS (
    DELETE FROM scores_pending WHERE id IN (SELECT id FROM picked)
    RETURNING lane, match_pks, ended_from, ended_to, created_at
), wanted AS (
    SELECT DISTINCT c.lane, x.pk, c.ended_from, c.ended_to FROM claimed c, unnest(c.match_pks) AS x(pk)
), res AS MATERIALIZED (
    -- a result is read by the lane its player falls in (a match with players in several lanes
    -- is pending in several rows). LATERAL with a fence (LIMIT/OFFSET, so the planner
    -- cannot flatten it): index lookups per claimed match whatever it believes of the tables'
    -- sizes (statistics lag tables that grow quickly: a hash join over all of scores_match was
    -- its choice on a young database)
    SELECT r.match_id, r.ended_at, {COUNTS_FROM} AS counts_from, r.player_id, r.board_id, r.score, r.subpart,
           r.metadata,
           r.display_name, m.match_ext, r.id AS result_id
    FROM wanted w
    CROSS JOIN LATERAL (
        SELECT m.status, m.counts_from, m.received_at, m.match_id AS match_ext FROM scores_match m
        WHERE m.id = w.pk LIMIT 1
    ) AS m
    CROSS JOIN LATERAL (
        SELECT r.* FROM scores_result r
        WHERE r.match_id = w.pk AND r.ended_at >= w.ended_from AND r.ended_at <= w.ended_to
          AND mod(r.player_id, {LANES}) = w.lane
        OFFSET 0
    ) AS r
    WHERE m.status = 'accepted'
), counted AS MATERIALIZED (
    SELECT b.id AS board_id, b.mode, z.prefix || wn.w AS "window", res.player_id, res.match_id, res.score, res.subpart,
           res.ended_at, res.metadata, res.match_ext, res.result_id, (b.mode = 'total' AND b.min_score < 0) AS signed
    FROM res
    JOIN scores_board b ON b.id = res.board_id
    JOIN scores_game g ON g.id = b.game_id
    CROSS JOIN LATERAL ({_ZONES}) AS z
    CROSS JOIN LATERAL ({_WINDOWS}) AS wn(w)
    LEFT JOIN scores_windowcutoff c ON c.board_id = b.id AND c."window" = z.prefix || wn.w
    WHERE c.cut_at IS NULL OR res.counts_from < c.cut_at
), best_new AS (
    SELECT DISTINCT ON (x.board_id, x."window", x.player_id)
        x.board_id, x."window", x.player_id, x.score AS value, x.ended_at AS reached_at,
        {encoding.sql_encoded(_BEST_PART, "x.ended_at")} AS encoded, x.metadata, x.ended_at AS latest_at
    FROM counted x JOIN scores_board b ON b.id = x.board_id
    WHERE x.mode = 'best'
    ORDER BY x.board_id, x."window", x.player_id, encoded DESC, x.ended_at, x.match_id
), best AS (
    INSERT INTO scores_playervalue AS pv
        (board_id, "window", player_id, value, reached_at, encoded, metadata, latest_at, updated_at)
    SELECT n.board_id, n."window", n.player_id, n.value, n.reached_at, n.encoded, n.metadata, n.latest_at,
           clock_timestamp()
    FROM best_new n
    WHERE NOT EXISTS (
        SELECT 1 FROM scores_playervalue o
        WHERE o.board_id = n.board_id AND o."window" = n."window" AND o.player_id = n.player_id
          AND (o.encoded > n.encoded OR (o.encoded = n.encoded AND o.reached_at <= n.reached_at)))
    ORDER BY n.board_id, n."window", n.player_id
    ON CONFLICT (board_id, "window", player_id) DO UPDATE SET
        value = EXCLUDED.value, reached_at = EXCLUDED.reached_at, encoded = EXCLUDED.encoded,
        metadata = EXCLUDED.metadata, latest_at = EXCLUDED.latest_at, updated_at = clock_timestamp()
    -- the same value reached earlier within its second (the encoding counts whole seconds) is
    -- the one kept, whatever order the results arrive in: docs/encoding.md, "Time resolution"
    WHERE EXCLUDED.encoded > pv.encoded OR (EXCLUDED.encoded = pv.encoded AND EXCLUDED.reached_at < pv.reached_at)
    RETURNING pv.board_id, pv."window", pv.player_id, pv.encoded, pv.value
), total_new AS (
    SELECT x.board_id, x."window", x.player_id, SUM(x.score)::bigint AS value,
        COALESCE(MAX(x.ended_at) FILTER (WHERE x.score > 0), MIN(x.ended_at)) AS reached_at,
        (array_agg(x.metadata ORDER BY x.ended_at DESC, x.match_id DESC))[1] AS metadata,
        MAX(x.ended_at) AS latest_at
    FROM counted x WHERE x.mode = 'total' AND NOT x.signed
    GROUP BY x.board_id, x."window", x.player_id
), total AS (
    INSERT INTO scores_playervalue AS pv
        (board_id, "window", player_id, value, reached_at, encoded, metadata, latest_at, updated_at)
    SELECT n.board_id, n."window", n.player_id, n.value, n.reached_at,
           {encoding.sql_encoded(f"LEAST(n.value, {_TOTAL_CAP})", "n.reached_at")}, n.metadata, n.latest_at,
           clock_timestamp()
    FROM total_new n JOIN scores_board b ON b.id = n.board_id
    ORDER BY n.board_id, n."window", n.player_id
    ON CONFLICT (board_id, "window", player_id) DO UPDATE SET
        value = pv.value + EXCLUDED.value,
        reached_at = {_TOTAL_REACHED},
        encoded = {encoding.sql_encoded("LEAST(pv.value + EXCLUDED.value, (SELECT " + _TOTAL_CAP + " FROM scores_board b WHERE b.id = pv.board_id))", _TOTAL_REACHED)},
        metadata = CASE WHEN EXCLUDED.latest_at >= pv.latest_at THEN EXCLUDED.metadata ELSE pv.metadata END,
        latest_at = GREATEST(pv.latest_at, EXCLUDED.latest_at),
        updated_at = clock_timestamp()
    RETURNING pv.board_id, pv."window", pv.player_id, pv.encoded, pv.value
), latest_new AS (
    -- latest boards: the most recent result (ended_at, then match_id bytes, then the last of a
    -- match's results), kept only if it is more recent than the stored one: the encoded score
    -- may go down (boards/services.py writes such boards absolutely)
    SELECT DISTINCT ON (x.board_id, x."window", x.player_id)
        x.board_id, x."window", x.player_id, x.score AS value, x.ended_at AS reached_at,
        {encoding.sql_encoded(_BEST_PART, "x.ended_at")} AS encoded, x.metadata, x.ended_at AS latest_at,
        x.match_ext AS latest_match
    FROM counted x JOIN scores_board b ON b.id = x.board_id
    WHERE x.mode = 'latest'
    ORDER BY x.board_id, x."window", x.player_id, x.ended_at DESC, x.match_ext COLLATE "C" DESC, x.result_id DESC
), latest AS (
    INSERT INTO scores_playervalue AS pv
        (board_id, "window", player_id, value, reached_at, encoded, metadata, latest_at, latest_match, updated_at)
    SELECT n.board_id, n."window", n.player_id, n.value, n.reached_at, n.encoded, n.metadata, n.latest_at,
           n.latest_match, clock_timestamp()
    FROM latest_new n
    ORDER BY n.board_id, n."window", n.player_id
    ON CONFLICT (board_id, "window", player_id) DO UPDATE SET
        value = EXCLUDED.value, reached_at = EXCLUDED.reached_at, encoded = EXCLUDED.encoded,
        metadata = EXCLUDED.metadata, latest_at = EXCLUDED.latest_at, latest_match = EXCLUDED.latest_match,
        updated_at = clock_timestamp()
    WHERE EXCLUDED.latest_at > pv.latest_at OR (EXCLUDED.latest_at = pv.latest_at
        AND EXCLUDED.latest_match COLLATE "C" > COALESCE(pv.latest_match, '') COLLATE "C")
    RETURNING pv.board_id, pv."window", pv.player_id, pv.encoded, pv.value
), signed_in AS (
    -- totals whose results may subtract, clamped at the board's floor in the order the results
    -- happened (docs/encoding.md, "Values that fall"): a batch continues the stored total when
    -- each of its results comes after the stored one's latest; a player with an earlier one
    -- (it arrived late) has the total computed again from their results (signed_history)
    SELECT x.board_id, x."window", x.player_id, x.score, x.ended_at, x.metadata, x.match_ext, x.result_id,
        o.value AS x0, o.reached_at AS stored_reached, COALESCE(b.min_total, 0) AS floor,
        o.id IS NOT NULL AND (x.ended_at < o.latest_at OR (x.ended_at = o.latest_at
            AND x.match_ext COLLATE "C" <= COALESCE(o.latest_match, '') COLLATE "C")) AS early
    FROM counted x JOIN scores_board b ON b.id = x.board_id
    LEFT JOIN scores_playervalue o
        ON o.board_id = x.board_id AND o."window" = x."window" AND o.player_id = x.player_id
    WHERE x.signed
), signed_late AS (
    SELECT board_id, "window", player_id FROM signed_in GROUP BY 1, 2, 3 HAVING bool_or(early)
), signed_history AS (
    -- every result counting in the window for those players, by the rules of `counted` (the
    -- batch's own included: its pending rows are the picked ones, deleted in this statement)
    SELECT l.board_id, l."window", l.player_id, res.score, res.ended_at, res.metadata, m.match_id AS match_ext,
        res.id AS result_id, NULL::bigint AS x0, NULL::timestamptz AS stored_reached,
        COALESCE(b.min_total, 0) AS floor
    FROM signed_late l
    JOIN scores_board b ON b.id = l.board_id
    JOIN scores_game g ON g.id = b.game_id
    JOIN scores_result res ON res.player_id = l.player_id AND res.board_id = l.board_id
    JOIN scores_match m ON m.id = res.match_id AND m.status = 'accepted'
    CROSS JOIN LATERAL ({_ZONES}) AS z
    CROSS JOIN LATERAL ({_WINDOWS}) AS wn(w)
    LEFT JOIN scores_windowcutoff c ON c.board_id = b.id AND c."window" = z.prefix || wn.w
    WHERE z.prefix || wn.w = l."window" AND (c.cut_at IS NULL OR {COUNTS_FROM} < c.cut_at)
      AND NOT EXISTS (
        SELECT 1 FROM scores_pending q
        WHERE q.lane = mod(res.player_id, {LANES}) AND res.match_id = ANY(q.match_pks)
          AND q.id NOT IN (SELECT id FROM picked))
), signed_rows AS (
    SELECT i.board_id, i."window", i.player_id, i.score, i.ended_at, i.metadata, i.match_ext, i.result_id, i.x0,
        i.stored_reached, i.floor
    FROM signed_in i
    WHERE NOT EXISTS (
        SELECT 1 FROM signed_late l
        WHERE l.board_id = i.board_id AND l."window" = i."window" AND l.player_id = i.player_id)
    UNION ALL SELECT * FROM signed_history
), signed_new AS ({clamped_totals_sql("signed_rows")}
), signed AS (
    INSERT INTO scores_playervalue AS pv
        (board_id, "window", player_id, value, reached_at, encoded, metadata, latest_at, latest_match, updated_at)
    SELECT n.board_id, n."window", n.player_id, n.value, n.reached_at,
           {encoding.sql_encoded(f"LEAST(n.value, COALESCE(b.max_total, n.floor + {encoding.VALUE_SPAN_LIMIT - 1})) - n.floor", "n.reached_at")},
           n.metadata, n.latest_at, n.latest_match, clock_timestamp()
    FROM signed_new n JOIN scores_board b ON b.id = n.board_id
    ORDER BY n.board_id, n."window", n.player_id
    ON CONFLICT (board_id, "window", player_id) DO UPDATE SET
        value = EXCLUDED.value, reached_at = EXCLUDED.reached_at, encoded = EXCLUDED.encoded,
        metadata = EXCLUDED.metadata, latest_at = EXCLUDED.latest_at, latest_match = EXCLUDED.latest_match,
        updated_at = clock_timestamp()
    RETURNING pv.board_id, pv."window", pv.player_id, pv.encoded, pv.value
), names AS (
    UPDATE scores_player p SET display_name = n.display_name
    FROM (SELECT DISTINCT ON (player_id) player_id, display_name FROM res
          WHERE display_name IS NOT NULL ORDER BY player_id, match_id DESC) n
    WHERE p.id = n.player_id AND p.display_name <> n.display_name
    RETURNING 1
), changed AS MATERIALIZED (
    -- with what the events feed says of each change (scores/events.py): the value before, read
    -- from the statement's snapshot, which none of the upserts above has touched yet
    -- (LATERAL with a fence, as in `res`: index lookups per row, never a scan of the players or
    -- the values on a planner's stale belief that they are few)
    SELECT c.board_id, c."window", c.player_id, c.encoded, c.value, o.value AS before, b.game_id, b.slug,
        p.external_id
    FROM (SELECT * FROM best UNION ALL SELECT * FROM total UNION ALL SELECT * FROM latest
          UNION ALL SELECT * FROM signed) c
    JOIN scores_board b ON b.id = c.board_id
    CROSS JOIN LATERAL (SELECT p.external_id FROM scores_player p WHERE p.id = c.player_id OFFSET 0) p
    LEFT JOIN LATERAL (
        SELECT o.value FROM scores_playervalue o
        WHERE o.player_id = c.player_id AND o.board_id = c.board_id AND o."window" = c."window" OFFSET 0
    ) o ON true
), decided AS MATERIALIZED (
    -- the matches the feed hears of here: accepted or held on arrival, each once, from the
    -- lowest lane its results' players fall in (a match may be pending in several lanes). A
    -- match a person decided (an approval counted through here) is told of by that decision.
    -- (No ORDER BY in the lookup: it made the planner walk a partition's primary key.)
    SELECT m.game_id, m.match_id, m.status FROM (SELECT DISTINCT lane, pk FROM wanted) w
    CROSS JOIN LATERAL (
        SELECT m.game_id, m.match_id, m.status, m.decided_at, m.ended_at FROM scores_match m WHERE m.id = w.pk OFFSET 0
    ) m
    WHERE m.status IN ('accepted', 'held') AND m.decided_at IS NULL
      AND w.lane = (SELECT min(mod(r.player_id, {LANES})) FROM scores_result r
                    WHERE r.match_id = w.pk AND r.ended_at = m.ended_at)
)
SELECT (SELECT count(*) FROM claimed), (SELECT min(created_at) FROM claimed),
    (SELECT array_agg(DISTINCT pk) FROM wanted), (SELECT count(*) FROM res), (SELECT count(*) FROM names),
    (SELECT array_agg(board_id) FROM changed), (SELECT array_agg("window") FROM changed),
    (SELECT array_agg(player_id) FROM changed), (SELECT array_agg(encoded) FROM changed),
    (SELECT array_agg(game_id) FROM changed), (SELECT array_agg(slug) FROM changed),
    (SELECT array_agg(external_id) FROM changed), (SELECT array_agg(before) FROM changed),
    (SELECT array_agg(value) FROM changed),
    (SELECT array_agg(game_id) FROM decided), (SELECT array_agg(match_id) FROM decided),
    (SELECT array_agg(status) FROM decided)
"""


@dataclass
class Folded:
    rows: int  # pending rows claimed (the batch)
    oldest: datetime | None  # when the oldest of them was committed
    match_pks: list[int]  # the matches they listed (held or voided ones included)
    results: int  # accepted results counted
    changed: list[EncodedValue]


NO_LIMIT = 2**63 - 1


def values_project(*, lanes: Sequence[int], max_matches: int, upto_id: int | None) -> Folded:
    """Claim and apply the oldest pending rows of these lanes (the caller holds their
    apply locks). After commit, boards/ mirrors what changed (score_accepted), through an outbox
    row written here."""
    params = {
        "lanes": pgarrays.ints(lanes),
        "upto": NO_LIMIT if upto_id is None else upto_id,
        "max": max_matches,
        **encoding.sql_params(),
    }
    (row,) = fetch_prepared(FOLD, params)
    rows, oldest, match_pks, results, _, boards, windows, players, encoded = row[:9]
    changed = list(zip(boards or [], windows or [], players or [], encoded or [], strict=True))
    if changed:
        outbox_id = outbox_insert(outbox_entries((b, w, p) for b, w, p, _ in changed))
        send_on_commit(score_accepted, outbox_id=outbox_id, values=changed)
    _events_draft(windows or [], *row[9:])
    return Folded(rows, oldest, match_pks or [], results, changed)


def _events_draft(
    windows: list[str],
    games: list[int] | None,
    slugs: list[str] | None,
    players: list[str] | None,
    befores: list[int | None] | None,
    afters: list[int] | None,
    match_games: list[int] | None,
    match_ids: list[str] | None,
    statuses: list[str] | None,
) -> None:
    """The batch's events, per game: its matches, then the values they changed."""
    by_game: dict[int, list[events.Event]] = defaultdict(list)
    at = events.event_at()
    for game_id, match_id, status in zip(match_games or [], match_ids or [], statuses or [], strict=True):
        kind = events.MATCH_ACCEPTED if status == "accepted" else events.MATCH_HELD
        by_game[game_id].append(events.event(kind, {"match_id": match_id}, at=at))
    for game_id, board, window, player, before, after in zip(
        games or [], slugs or [], windows, players or [], befores or [], afters or [], strict=True
    ):
        if before != after:  # a best value reached earlier within its second: same value
            by_game[game_id].append(
                events.value_changed(player=player, board=board, window=window, before=before, after=after, at=at)
            )
    events.events_draft_grouped(by_game)
