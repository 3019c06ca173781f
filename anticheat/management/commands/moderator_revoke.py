from django.core.management.base import BaseCommand, CommandError, CommandParser

from anticheat.services import ModeratorError, moderator_revoke


class Command(BaseCommand):
    help = 'Take the named games away from moderator USERNAME (docs/moderation.md, "Moderators per game").'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("games", nargs="+", metavar="GAME", help="game slugs")

    def handle(self, *args: object, username: str, games: list[str], **options: object) -> None:
        try:
            removed = moderator_revoke(username=username, games=games)
        except ModeratorError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{username}: {removed} game(s) taken away")
