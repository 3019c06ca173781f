from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scores.config import ConfigError, parse_game_config
from scores.services import game_config_apply


class Command(BaseCommand):
    help = "Create or update a game, its boards and seasons from a TOML file (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: object, file: Path, **options: object) -> None:
        try:
            spec = parse_game_config(file.read_text(encoding="utf-8"))
            changes = game_config_apply(spec)
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc}") from None
        except ConfigError as exc:
            raise CommandError(f"{file}: refused, nothing applied: {exc}") from None
        for line in changes:
            self.stdout.write(line)
        self.stdout.write(f"game {spec.slug}: " + ("applied" if changes else "unchanged"))
