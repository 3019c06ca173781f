"""A player's league group (contract 13.6, docs/competitions.md): read as section 5's player
reads (the game's server keys, staff, the player and their friends)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from boards.api.common import PLAYER_READ_ERRORS, WINDOW_PARAM, board_window
from boards.api.players import PlayerReadApi
from competitions.leagues import league_of, membership_of
from leaderboard_project.errors import ApiError, NotFound
from scores import encoding
from scores.selectors.players import profiles


class LeagueApi(PlayerReadApi):
    class EntrySerializer(serializers.Serializer):
        rank = serializers.IntegerField()
        player = serializers.CharField()
        display_name = serializers.CharField()
        score = serializers.IntegerField()

    class OutputSerializer(serializers.Serializer):
        window = serializers.CharField()
        tier = serializers.CharField(allow_null=True)
        group = serializers.CharField(allow_null=True)
        entries = serializers.ListField(child=serializers.DictField())
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
    def get(self, request: Request, game: str, board: str, player: str) -> Response:
        cfg, _, window = board_window(game, board, request)
        league = league_of(cfg)
        if league is None:
            raise NotFound(f"board {board!r} is not a league", code="not_a_league")
        if not window.startswith("season:"):
            raise ApiError("a league is read over a season window: ?window=season or season:<slug>", code="bad_window")
        pk = self.player_pk(request, cfg, player)
        season_id = _season_id(cfg, window)
        membership = membership_of(cfg.id, season_id=season_id, player_pk=pk) if season_id else None
        if membership is None:
            body = {"window": window, "tier": None, "group": None, "entries": [], "promote_until": 0}
            return Response({**body, "relegate_from": None})
        found = profiles(cfg.id, window=window, pks=membership.member_pks)
        ranked = sorted(
            (p for p in found.values() if p.encoded is not None),
            key=lambda p: (-p.encoded, p.external_id.encode()),
        )
        entries = [
            {
                "rank": i + 1,
                "player": p.external_id,
                "display_name": p.display_name,
                "score": encoding.decode_value(cfg, p.encoded),
            }
            for i, p in enumerate(ranked)
        ]
        top = len(league.tiers) - 1
        relegate_from = (
            max(len(entries) - league.relegate + 1, league.promote + 1)
            if membership.tier > 0 and league.relegate and entries
            else None
        )
        return Response(
            {
                "window": window,
                "tier": league.tiers[membership.tier],
                "group": str(membership.group_id),
                "entries": entries,
                "promote_until": league.promote if membership.tier < top else 0,
                "relegate_from": relegate_from,
            }
        )


def _season_id(cfg, window: str) -> int | None:
    from scores.selectors import cached_game_config

    config = cached_game_config(cfg.game_slug)
    return config.season_ids.get(window.removeprefix("season:")) if config else None
