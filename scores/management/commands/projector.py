"""`manage.py projector [--lanes all|0-7,12]`: apply committed matches to values and boards.

`make run` starts one that owns every lane (scores/locks.py). See scores/projection/runner.py."""

from __future__ import annotations

import logging

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scores.projection.batch import MAX_MATCHES
from scores.projection.runner import Projector, parse_lanes


class Command(BaseCommand):
    help = "Apply committed matches to values and boards, batch after batch, until stopped."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--lanes",
            default="all",
            help="the lanes to own: 'all' (default), or a list such as '0-7' or '0,3,8-11'",
        )
        parser.add_argument(
            "--idle-seconds",
            type=float,
            default=1.0,
            help="with nothing notified, look for pending matches this often (default 1)",
        )

        parser.add_argument(
            "--max-matches",
            type=int,
            default=MAX_MATCHES,
            help=f"matches one batch claims at most (default {MAX_MATCHES})",
        )
        parser.add_argument(
            "--pause-ms",
            type=float,
            default=0.0,
            help="pause this long after every batch: a deliberately slow projector, for overload drills (default 0)",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            lanes = parse_lanes(str(options["lanes"]))
        except ValueError as exc:
            raise CommandError(f"--lanes: {exc}") from None
        logging.getLogger("scores.projection").setLevel(logging.INFO)
        projector = Projector(
            lanes=lanes,
            idle_seconds=float(options["idle_seconds"]),
            max_matches=int(options["max_matches"]),
            pause_seconds=float(options["pause_ms"]) / 1000,
        )
        projector.install_signal_handlers()
        totals = projector.run()
        self.stdout.write(f"projector stopped: {totals.matches} matches, {totals.results} results applied")
