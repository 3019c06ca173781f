from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from boards.services import boards_rebuild
from scores.models import Board, PlayerValue


class Command(BaseCommand):
    help = "Rebuild the Redis sorted sets from Postgres; readers see the old or the new board, never a half-built one."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--game", help="only this game's boards")
        parser.add_argument("--board", help="only this board (with --game)")

    def handle(self, *args: object, game: str | None, board: str | None, **options: object) -> None:
        if board and not game:
            raise CommandError("--board needs --game")
        boards = Board.objects.select_related("game").order_by("id")
        if game:
            boards = boards.filter(game__slug=game)
        if board:
            boards = boards.filter(slug=board)
        boards = list(boards)
        if (game or board) and not boards:
            raise CommandError("no such game or board")
        total = PlayerValue.objects.filter(board__in=boards).count()
        with tqdm(total=total, unit="entries", unit_scale=True, desc="rebuild", disable=None) as bar:
            report = boards_rebuild(boards=None if not (game or board) else boards, progress=bar.update)
        rate = report.entries / report.seconds if report.seconds else 0.0
        self.stdout.write(
            f"rebuilt {report.boards} boards, {report.windows} windows, {report.entries} entries "
            f"in {report.seconds:.2f} s ({rate:,.0f} entries/s); replayed {report.caught_up} concurrent changes"
        )
