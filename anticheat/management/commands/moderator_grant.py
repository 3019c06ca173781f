import os

from django.core.management.base import BaseCommand, CommandError, CommandParser

from anticheat.services import ModeratorError, moderator_grant


class Command(BaseCommand):
    help = (
        'Make USERNAME a staff moderator of the named games (docs/moderation.md, "Moderators per game"). '
        "A missing user is created with the password in MODERATOR_PASSWORD; never a superuser."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("games", nargs="+", metavar="GAME", help="game slugs")

    def handle(self, *args: object, username: str, games: list[str], **options: object) -> None:
        try:
            grants = moderator_grant(
                username=username, games=games, password=os.environ.get("MODERATOR_PASSWORD") or None
            )
        except ModeratorError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{username} moderates {', '.join(g.game.slug for g in grants)}")
