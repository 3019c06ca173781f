import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from competitions.webhooks import webhook_secret_create
from scores.models import Game


class Command(BaseCommand):
    help = (
        'Create (or replace) the secret a game\'s webhooks are signed with; prints {"game": ..., "secret": ...}. '
        "The secret is shown once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("game")

    def handle(self, *args: object, game: str, **options: object) -> None:
        game_obj = Game.objects.filter(slug=game).first()
        if game_obj is None:
            raise CommandError(f"unknown game {game!r}")
        self.stdout.write(json.dumps({"game": game_obj.slug, "secret": webhook_secret_create(game=game_obj)}))
