"""`manage.py projector [--partitions all|0-7,12]`: apply committed matches to values and boards.

`make run` starts one that owns every partition. See scores/projection/runner.py."""

from __future__ import annotations

import logging

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scores.projection.runner import Projector, parse_partitions


class Command(BaseCommand):
    help = "Apply committed matches to values and boards, batch after batch, until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--partitions",
            default="all",
            help="the partitions to own: 'all' (default), or a list such as '0-7' or '0,3,8-11'",
        )
        parser.add_argument(
            "--idle-seconds",
            type=float,
            default=1.0,
            help="with nothing notified, look for pending matches this often (default 1)",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            partitions = parse_partitions(str(options["partitions"]))
        except ValueError as exc:
            raise CommandError(f"--partitions: {exc}") from None
        logging.getLogger("scores.projection").setLevel(logging.INFO)
        projector = Projector(partitions=partitions, idle_seconds=float(options["idle_seconds"]))
        projector.install_signal_handlers()
        totals = projector.run()
        self.stdout.write(f"projector stopped: {totals.matches} matches, {totals.results} results applied")
