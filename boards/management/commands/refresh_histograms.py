"""`manage.py refresh_histograms [--now T]`: what beat runs every minute, by hand."""

from datetime import datetime

from django.core.management.base import BaseCommand, CommandParser

from boards.histogram import histograms_refresh
from boards.management.arguments import rfc3339


class Command(BaseCommand):
    help = "Rebuild the score histograms of the current board windows that changed since the last refresh."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--now", type=rfc3339, help="refresh the windows current at this moment (RFC 3339), not the present"
        )

    def handle(self, *args: object, now: datetime | None, **options: object) -> None:
        report = histograms_refresh(now)
        self.stdout.write(
            f"histograms: {report.windows} board windows, {report.built} rebuilt, {report.skipped} unchanged "
            f"in {report.seconds:.2f} s"
        )
