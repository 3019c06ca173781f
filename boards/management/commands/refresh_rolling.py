from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser

from boards.rolling import rolling_windows_refresh


def parse_now(value: str | None) -> datetime | None:
    """An RFC 3339 moment with its offset (2026-11-29T18:00:00Z), or None for the present."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--now: {value!r} is not an RFC 3339 date-time") from None
    if moment.tzinfo is None:
        raise CommandError(f"--now: {value!r} needs an offset (Z or +01:00)")
    return moment


class Command(BaseCommand):
    help = "Rebuild the rolling windows (last7d, last30d) of every board that keeps them, from the daily windows."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--now", help="build the windows as of this moment (RFC 3339), not the present")

    def handle(self, *args: object, now: str | None, **options: object) -> None:
        report = rolling_windows_refresh(parse_now(now))
        self.stdout.write(
            f"refreshed {report.windows} rolling windows on {report.boards} boards, "
            f"{report.entries} entries in {report.seconds:.2f} s"
        )
