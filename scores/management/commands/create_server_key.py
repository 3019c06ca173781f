import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scores.models import Game
from scores.services import server_key_create


class Command(BaseCommand):
    help = 'Create a server key for a game; prints {"key_id": ..., "secret": ...}. The secret is shown once.'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("game")
        parser.add_argument("name")
        parser.add_argument("--scopes", default="submit", help="comma-separated: submit, moderate")

    def handle(self, *args: object, game: str, name: str, scopes: str, **options: object) -> None:
        game_obj = Game.objects.filter(slug=game).first()
        if game_obj is None:
            raise CommandError(f"unknown game {game!r}")
        try:
            key, secret = server_key_create(
                game=game_obj, name=name, scopes=[s.strip() for s in scopes.split(",") if s.strip()]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps({"key_id": key.key_id, "secret": secret}))
