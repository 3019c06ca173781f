"""A player's league group (docs/api.md §12.2, docs/competitions.md): read as docs/api.md §3.3's player
reads (the game's server keys, staff, the player and their friends)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from boards.api.common import PLAYER_READ_ERRORS, WINDOW_PARAM, board_window
from boards.api.players import PlayerReadApi
from competitions.leagues import league_of
from competitions.selectors import LeagueEntry, league_group_read
from leaderboard_project.errors import ApiError, NotFound
from leaderboard_project.plain import json_response


class LeagueEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    player = serializers.CharField()
    display_name = serializers.CharField()
    score = serializers.IntegerField()
    subscores = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="only on boards that declare sub-scores: the value's sub-scores by name (docs/api.md §2.3)",
    )

    class Meta:
        ref_name = "LeagueEntry"


class LeagueApi(PlayerReadApi):
    class OutputSerializer(serializers.Serializer):
        window = serializers.CharField()
        tier = serializers.CharField(allow_null=True)
        group = serializers.CharField(allow_null=True)
        entries = LeagueEntrySerializer(many=True)
        promote_until = serializers.IntegerField(help_text="ranks 1 to this one move up a tier (0: none)")
        relegate_from = serializers.IntegerField(
            allow_null=True, help_text="ranks from this one down move down a tier (null: none)"
        )

        class Meta:
            ref_name = "LeagueGroup"  # the schema's component name: every view's is "Output"

    @extend_schema(
        operation_id="boards_player_league",
        summary="The player's league group in a season",
        parameters=[WINDOW_PARAM],
        responses={200: OutputSerializer, **PLAYER_READ_ERRORS},
    )
    def get(self, request: HttpRequest, game: str, board: str, player: str) -> HttpResponse:
        user, auth = self.reader(request)
        cfg, _, window = board_window(game, board, request)
        league = league_of(cfg)
        if league is None:
            raise NotFound(f"board {board!r} is not a league", code="not_a_league")
        if not window.startswith("season:"):
            raise ApiError("a league is read over a season window: ?window=season or season:<slug>", code="bad_window")
        pk = self.player_pk(user, auth, cfg, player)
        read = league_group_read(cfg, window=window, player_pk=pk)
        assert read is not None  # a league, checked above
        return json_response(
            {
                "window": read.window,
                "tier": read.tier,
                "group": read.group,
                "entries": [entry_body(e) for e in read.entries],
                "promote_until": read.promote_until,
                "relegate_from": read.relegate_from,
            },
            allow=self.allow,
        )


def entry_body(e: LeagueEntry) -> dict[str, Any]:
    body: dict[str, Any] = {"rank": e.rank, "player": e.player, "display_name": e.display_name, "score": e.score}
    if e.subscores is not None:
        body["subscores"] = e.subscores
    return body
