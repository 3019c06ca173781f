from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo import load as demo
from demo.friends import demo_friends_heal
from rediskit.client import REDIS_DOWN


class Command(BaseCommand):
    help = (
        "Load the demo game (games/demo.toml) with players and ~45 days of matches, then fill its "
        "boards in Redis. Idempotent: does nothing if the demo game already has players."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--players", type=int, default=100_000)
        parser.add_argument("--matches", type=int, default=30_000)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")

    def handle(self, *args: object, players: int, matches: int, seed: int, no_progress: bool, **options) -> None:
        if players < 0 or matches < 0:
            raise CommandError("--players and --matches must not be negative")
        try:
            demo.demo_allowed_check()
        except demo.DemoRefused as exc:
            raise CommandError(str(exc)) from None
        if demo.demo_loaded():
            self.stdout.write("demo data already loaded")
            for slug in demo.demo_seasons_current():
                self.stdout.write(f"the demo's last season had ended: created season {slug}")
            self._heal_redis()
            made = demo.demo_accounts_heal()
            if made:
                self.stdout.write(f"made sign-in accounts for {made:,} demo players (password: demo)")
            try:
                friends = demo_friends_heal()
            except REDIS_DOWN as exc:
                self.stderr.write(f"warning: Redis unreachable, demo friend lists not made: {exc}")
                friends = 0
            if friends:
                self.stdout.write(f"made friend lists for the demo players: {friends // 2:,} friendships")
            return
        try:
            report = demo.demo_load(players=players, matches=matches, seed=seed, progress=not no_progress)
        except REDIS_DOWN as exc:
            raise CommandError(
                f"demo data is in Postgres but Redis could not be filled ({exc}); "
                "run `manage.py rebuild_boards --game demo` once Redis is up"
            ) from None
        if not report.loaded:  # another demo_load won the race
            self.stdout.write("demo data already loaded")
            return
        phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.phases.items())
        self.stdout.write(
            f"demo data loaded: {report.players:,} players, {report.matches:,} matches, "
            f"{report.results:,} results, {report.values:,} board values, "
            f"{report.redis_entries:,} sorted-set entries, {report.accounts:,} player logins, "
            f"{report.friendships // 2:,} friendships in {report.seconds:.1f} s ({phases})"
        )

    def _heal_redis(self) -> None:
        """Redis keeps nothing on disk: after its restart, put the demo boards back."""
        from boards.services import boards_rebuild

        try:
            missing = demo.demo_boards_missing_in_redis()
            if missing:
                self.stdout.write(f"demo boards missing in Redis: rebuilding {', '.join(b.slug for b in missing)}")
                report = boards_rebuild(boards=missing)
                self.stdout.write(f"rebuilt {report.entries:,} sorted-set entries in {report.seconds:.1f} s")
        except REDIS_DOWN as exc:
            self.stderr.write(f"warning: Redis unreachable, demo boards not checked: {exc}")
