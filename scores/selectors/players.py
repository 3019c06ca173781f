"""Reads of players: who a key or a user is, their friends, and their profiles on a board window."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connection

from scores.models import Friendship, Player, PlayerAccount


def player_pk(game_id: int, *, external_id: str) -> int | None:
    return Player.objects.filter(game_id=game_id, external_id=external_id).values_list("pk", flat=True).first()


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
    with connection.cursor() as cur:
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
