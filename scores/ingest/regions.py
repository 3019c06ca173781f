"""Regional boards: a player plays in one region per season. The request checks a match's
regions against the claims recorded, fills in the known region of results that name none, and
records new claims (the unique constraint decides between two racing requests)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from django.db import connection

from scores import pgarrays
from scores.ingest.matches import InvalidMatch, MatchConflict, MatchIn
from scores.selectors import GameConfig
from scores.windows import claim_seasons

ClaimKey = tuple[str, str | None]  # (player id, season slug or None outside seasons)


def region_claims_load(config: GameConfig, matches: Sequence[MatchIn]) -> dict[ClaimKey, str]:
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


def regionalize(config: GameConfig, match: MatchIn, claims: dict[ClaimKey, str]) -> MatchIn:
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


def region_claims_store(config: GameConfig, matches: list[MatchIn], player_ids: dict[str, int]) -> None:
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
