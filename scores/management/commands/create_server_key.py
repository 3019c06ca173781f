import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scores.models import Game, ServerKey
from scores.services import server_key_create


def scopes_parse(values: list[str]) -> list[str]:
    """`--scopes submit,moderate`, `--scopes submit moderate` and `--scopes "submit, moderate"`
    all mean the same two scopes."""
    return [s.strip() for value in values for s in value.split(",") if s.strip()]


class Command(BaseCommand):
    help = 'Create a server key for a game; prints {"key_id": ..., "secret": ...}. The secret is shown once.'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("game")
        parser.add_argument("name")
        parser.add_argument(
            "--scopes",
            nargs="+",
            default=["submit"],
            help=f"scopes, comma- or space-separated: {', '.join(ServerKey.SCOPES)} (default: submit)",
        )

    def handle(self, *args: object, game: str, name: str, scopes: list[str], **options: object) -> None:
        game_obj = Game.objects.filter(slug=game).first()
        if game_obj is None:
            raise CommandError(f"unknown game {game!r}")
        try:
            key, secret = server_key_create(game=game_obj, name=name, scopes=scopes_parse(scopes))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps({"key_id": key.key_id, "secret": secret}))
