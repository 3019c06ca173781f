from datetime import datetime, timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from seasons.services import windows_close

FUTURE_TOLERANCE = timedelta(seconds=60)  # clock skew between the operator's machine and ours


class Command(BaseCommand):
    help = "Freeze the standings of every window whose grace period has passed (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--now", help="act as if it were this RFC 3339 instant (e.g. 2026-11-30T00:06:00Z)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="accept a --now ahead of the real clock (freezes windows that have not ended yet)",
        )

    def handle(self, *args: object, now: str | None, force: bool = False, **options: object) -> None:
        moment = None
        if now:
            try:
                moment = datetime.fromisoformat(now)
            except ValueError:
                raise CommandError(f"--now {now!r} is not an RFC 3339 date-time") from None
            if moment.tzinfo is None:
                raise CommandError("--now needs an offset, e.g. Z")
            # A frozen window is final: a typo in the date must not freeze today's standings early.
            ahead = moment - timezone.now()
            if ahead > FUTURE_TOLERANCE and not force:
                raise CommandError(
                    f"--now {now} is {ahead.total_seconds():.0f} s ahead of the clock: windows that have not "
                    "ended would be frozen. Add --force if that is really meant."
                )
        report = windows_close(now=moment)
        for label in report.frozen:
            self.stdout.write(f"frozen  {label}")
        for label in report.waiting:
            self.stdout.write(f"waiting {label}")
        for line in report.failed:
            self.stderr.write(f"failed  {line}")
        self.stdout.write(
            f"{len(report.frozen)} frozen, {len(report.waiting)} waiting, {report.already} already frozen"
        )
        if report.failed:  # every other window was still closed; the exit status tells the operator
            raise CommandError(f"{len(report.failed)} window(s) failed to close (see above); the next run tries again")
