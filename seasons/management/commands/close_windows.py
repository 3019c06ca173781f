from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser

from seasons.services import windows_close


class Command(BaseCommand):
    help = "Freeze the standings of every window whose grace period has passed (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--now", help="act as if it were this RFC 3339 instant (e.g. 2026-11-30T00:06:00Z)")

    def handle(self, *args: object, now: str | None, **options: object) -> None:
        moment = None
        if now:
            try:
                moment = datetime.fromisoformat(now)
            except ValueError:
                raise CommandError(f"--now {now!r} is not an RFC 3339 date-time") from None
            if moment.tzinfo is None:
                raise CommandError("--now needs an offset, e.g. Z")
        report = windows_close(now=moment)
        for label in report.frozen:
            self.stdout.write(f"frozen  {label}")
        for label in report.waiting:
            self.stdout.write(f"waiting {label}")
        self.stdout.write(
            f"{len(report.frozen)} frozen, {len(report.waiting)} waiting, {report.already} already frozen"
        )
