"""`manage.py refresh_rolling [--now T]`: what beat runs every minute, by hand."""

from datetime import datetime

from django.core.management.base import BaseCommand, CommandParser

from boards.management.arguments import rfc3339
from boards.rolling import rolling_windows_refresh


class Command(BaseCommand):
    help = "Rebuild the rolling windows (last7d, last30d) of every board that keeps them, from the daily windows."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--now", type=rfc3339, help="build the windows as of this moment (RFC 3339), not the present"
        )

    def handle(self, *args: object, now: datetime | None, **options: object) -> None:
        report = rolling_windows_refresh(now)
        self.stdout.write(
            f"refreshed {report.windows} rolling windows on {report.boards} boards, "
            f"{report.entries} entries in {report.seconds:.2f} s"
        )
