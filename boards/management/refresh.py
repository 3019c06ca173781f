"""The refresh commands (refresh_histograms, refresh_rolling): beat runs each refresh every
minute; the command runs one by hand, as of the present or of another moment (--now), and
prints what it did. Each command module is one line: `Command = refresh_command("<name>")`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from boards.histogram import histograms_refresh
from boards.rolling import rolling_windows_refresh


def rfc3339(value: str) -> datetime:
    """An RFC 3339 moment with its offset (2026-11-29T18:00:00Z): argparse's type for --now."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an RFC 3339 date-time") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} needs an offset (Z or +01:00)")
    return moment


# command name -> (help, the refresh, the line printed from its report)
REFRESHES: dict[str, tuple[str, Callable[[datetime | None], Any], Callable[[Any], str]]] = {
    "refresh_histograms": (
        "Rebuild the score histograms of the current board windows that changed since the last refresh.",
        histograms_refresh,
        lambda r: (
            f"histograms: {r.windows} board windows, {r.built} rebuilt, {r.skipped} unchanged in {r.seconds:.2f} s"
        ),
    ),
    "refresh_rolling": (
        "Rebuild the rolling windows (last7d, last30d) of every board that keeps them, from the daily windows.",
        rolling_windows_refresh,
        lambda r: (
            f"refreshed {r.windows} rolling windows on {r.boards} boards, {r.entries} entries in {r.seconds:.2f} s"
        ),
    ),
}


def refresh_command(name: str) -> type[BaseCommand]:
    """The management command class for one refresh of REFRESHES."""
    help_text, refresh, summary = REFRESHES[name]

    class Command(BaseCommand):
        help = help_text

        def add_arguments(self, parser: CommandParser) -> None:
            parser.add_argument("--now", type=rfc3339, help="run as of this moment (RFC 3339), not the present")

        def handle(self, *args: object, now: datetime | None, **options: object) -> None:
            self.stdout.write(summary(refresh(now)))

    return Command
