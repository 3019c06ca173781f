"""Reads of the durable store that other modules need."""

from __future__ import annotations

from dataclasses import dataclass

from scores.models import Board, Game, Season
from scores.windows import SeasonSpan


@dataclass(frozen=True)
class GameConfig:
    game: Game
    boards: dict[str, Board]
    seasons: tuple[SeasonSpan, ...]


def game_get(slug: str) -> Game | None:
    return Game.objects.filter(slug=slug).first()


def season_spans(game_id: int) -> tuple[SeasonSpan, ...]:
    rows = Season.objects.filter(game_id=game_id).order_by("starts_at").values_list("slug", "starts_at", "ends_at")
    return tuple(SeasonSpan(slug, starts, ends) for slug, starts, ends in rows)


def game_config(game: Game) -> GameConfig:
    boards = {b.slug: b for b in Board.objects.filter(game=game)}
    return GameConfig(game=game, boards=boards, seasons=season_spans(game.id))
