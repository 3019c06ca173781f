"""Reads of players: who a key or a user is, their friends, their profiles on a board window, and
what the player pages show (names, search by id or display-name prefix, results and values)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import Lower

from leaderboard_project.replicas import read_connection
from scores.models import Friendship, Player, PlayerAccount, PlayerValue, Result


def player_pk(game_id: int, *, external_id: str) -> int | None:
    return Player.objects.filter(game_id=game_id, external_id=external_id).values_list("pk", flat=True).first()


def player_external_ids(pks: Iterable[int]) -> dict[int, str]:
    """pk -> the id games use (docs/api.md §1.1). Read on the primary: the callers (the events
    feed's writers) may ask for a player their own transaction created."""
    return dict(Player.objects.using("default").filter(pk__in=set(pks)).values_list("pk", "external_id"))


def player_of_user(user_id: int | None, *, game_id: int) -> int | None:
    """The player a signed-in user plays as in a game (scores.PlayerAccount), or None."""
    if not user_id:
        return None
    return PlayerAccount.objects.filter(user_id=user_id, game_id=game_id).values_list("player_id", flat=True).first()


def friend_pks(player_pk_: int) -> list[int]:
    return list(Friendship.objects.filter(player_id=player_pk_).values_list("friend_id", flat=True))


@dataclass(frozen=True)
class Profile:
    external_id: str
    display_name: str
    metadata: dict[str, Any] | None
    encoded: int | None  # the value Postgres holds for this board window, if any


def profiles(board_id: int, *, window: str, pks: list[int]) -> dict[int, Profile]:
    """Players with their value's metadata on one board window, in one query."""
    with read_connection().cursor() as cur:
        cur.execute(
            """
            SELECT p.id, p.external_id, p.display_name, pv.metadata, pv.encoded
            FROM scores_player p
            LEFT JOIN scores_playervalue pv ON pv.player_id = p.id AND pv.board_id = %s AND pv."window" = %s
            WHERE p.id = ANY(%s)
            """,
            [board_id, window, pks],
        )
        return {pk: Profile(ext, name, json_value(meta), enc) for pk, ext, name, meta, enc in cur.fetchall()}


def json_value(value: Any) -> Any:
    # Django has psycopg hand jsonb to raw cursors as text (its JSONField decodes it).
    return json.loads(value) if isinstance(value, str) else value


def player_names(pk: int) -> tuple[str, str]:
    """(external id, display name) of a player; ("", "") if there is none."""
    return Player.objects.filter(pk=pk).values_list("external_id", "display_name").first() or ("", "")


def player_name_matches(game_id: int, *, q: str) -> QuerySet[Player]:
    """Players of a game whose display name starts with `q`, any case (index player_name_prefix)."""
    return (
        Player.objects.annotate(lname=Lower("display_name"))
        .filter(game_id=game_id, lname__startswith=q.lower())
        .order_by()
    )


@dataclass(frozen=True)
class SearchResult:
    players: list[tuple[int, str, str]]  # (pk, external id, display name), at most `limit`
    count: int  # how many players match, counted up to `count_cap`
    more: bool  # more than `count_cap` match


def player_search(game_id: int, *, q: str, limit: int, count_cap: int = 1000) -> SearchResult:
    """The player whose id is `q`, then those whose display name starts with `q` (any case):
    index lookups only (player_unique_id_per_game, player_name_prefix), at most `limit` of them,
    and how many match, counted up to `count_cap` (a one-letter prefix at 100M players must not
    count millions of index entries)."""
    exact = list(Player.objects.filter(game_id=game_id, external_id=q).values_list("pk", "external_id", "display_name"))
    # No ORDER BY: a pattern-ops index cannot serve one, and sorting every match of a short
    # prefix would read them all; the first `limit` in index order are sorted here.
    by_name = player_name_matches(game_id, q=q).values_list("pk", "external_id", "display_name")[:limit]
    seen = {pk for pk, _, _ in exact}
    found = sorted((r for r in by_name if r[0] not in seen), key=lambda r: (r[2].lower(), r[1]))
    capped = player_name_matches(game_id, q=q).exclude(pk__in=seen).values("pk")[: count_cap + 1]
    count = len(exact) + Player.objects.filter(pk__in=capped).count()
    return SearchResult((exact + found)[:limit], min(count, count_cap + len(exact)), count > count_cap + len(exact))


@dataclass(frozen=True)
class PlayerResult:
    match_id: str
    ended_at: Any
    status: str  # accepted, held, voided
    score: int
    metadata: dict[str, Any] | None
    subpart: int = 0  # the result's sub-score digits (scores.encoding.decode_subpart); 0 without any


def player_results(player_pk_: int, *, board_id: int, offset: int, limit: int) -> list[PlayerResult]:
    """A player's results on one board, newest first (the (player, board) index, then a sort of
    that player's own results)."""
    rows = (
        Result.objects.filter(player_id=player_pk_, board_id=board_id)
        .order_by("-match__ended_at", "-match_id")
        .values_list("match__match_id", "match__ended_at", "match__status", "score", "metadata", "subpart")[
            offset : offset + limit
        ]
    )
    return [PlayerResult(*r) for r in rows]


def player_result_counts(player_pk_: int) -> dict[int, int]:
    """How many results a player has per board id."""
    rows = Result.objects.filter(player_id=player_pk_).values_list("board_id").annotate(n=Count("id"))
    return dict(rows)


def player_values(player_pk_: int, *, pairs: list[tuple[int, str]]) -> dict[tuple[int, str], tuple[int, Any, int]]:
    """(value, reached_at, encoded) of a player per (board id, window) among `pairs`, where they have one."""
    if not pairs:
        return {}
    query = Q()
    for board_id, window in pairs:
        query |= Q(board_id=board_id, window=window)
    rows = PlayerValue.objects.filter(query, player_id=player_pk_).values_list(
        "board_id", "window", "value", "reached_at", "encoded"
    )
    return {(b, w): (v, at, e) for b, w, v, at, e in rows}
