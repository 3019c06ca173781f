"""`manage.py append_service`: the local append service the web processes hand single matches to
(group commit: scores/ingest/gather.py). `make run` starts one beside the web tier."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from scores.ingest.gather import AppendService


class Command(BaseCommand):
    help = "Store the single matches the web processes hand over, each gathered group in one transaction."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--socket", default="", help="the unix socket (default WEB_APPEND_SOCKET)")
        parser.add_argument(
            "--gather-ms", type=float, default=None, help="gather window in ms (default WEB_APPEND_GATHER_MS)"
        )
        parser.add_argument(
            "--gather-max", type=int, default=None, help="most matches in a group (default WEB_APPEND_GATHER_MAX)"
        )

    def handle(self, *args: object, **options: object) -> None:
        path = Path(str(options["socket"] or settings.WEB_APPEND_SOCKET))
        gather_ms = options["gather_ms"]
        gather_max = options["gather_max"]
        service = AppendService(
            path,
            gather_ms=float(gather_ms) if isinstance(gather_ms, int | float) else settings.WEB_APPEND_GATHER_MS,
            gather_max=int(gather_max) if isinstance(gather_max, int) else settings.WEB_APPEND_GATHER_MAX,
        )

        def stop(_signum: int, _frame: FrameType | None) -> None:
            service.stop()

        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, stop)
        service.listen()
        self.stdout.write(
            f"append service on {path} (gather {service.gather_s * 1000:g} ms, at most {service.gather_max})"
        )
        self.stdout.flush()
        service.serve()
        stats = service.stats
        self.stdout.write(
            f"append service stopped: {stats.matches} matches in {stats.groups} groups (largest {stats.largest})"
        )
