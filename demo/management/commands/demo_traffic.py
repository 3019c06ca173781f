import os
import random
import signal
import threading
import time
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from demo import load, names, traffic
from scores.models import Game
from scores.services import server_key_create


class Command(BaseCommand):
    help = (
        "Play gentle demo traffic against a running server: signed matches among the demo players, "
        "a few per second, until SIGINT/SIGTERM. Never exits on its own."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rate", type=float, default=5.0, help="matches per second (default 5)")
        parser.add_argument(
            "--base-url",
            default=f"http://127.0.0.1:{os.environ.get('PORT') or '8000'}",
            help="the server to talk to (default http://127.0.0.1:$PORT)",
        )
        parser.add_argument("--seed", type=int, default=None, help="for a reproducible sequence of matches")

    def say(self, line: str) -> None:
        self.stdout.write(f"{datetime.now():%H:%M:%S} demo_traffic: {line}")
        self.stdout.flush()

    def handle(self, *args: object, rate: float, base_url: str, seed: int | None, **options: object) -> None:
        try:
            load.demo_allowed_check()
        except load.DemoRefused as exc:
            raise CommandError(str(exc)) from None
        rate = max(rate, 0.01)
        stop = threading.Event()

        def on_signal(signum: int, _frame: object) -> None:
            stop.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, on_signal)

        setup = self._setup(stop)
        if setup is None:
            return
        key_id, secret, players, rules = setup
        self.say(f"{len(players):,} demo players, server key {key_id}; waiting for {base_url}/healthz")
        traffic.wait_healthy(base_url, stop, self.say)
        if stop.is_set():
            return
        self.say(f"posting about {rate:g} matches/s to {base_url}/api/v1/games/{names.DEMO_SLUG}/matches")
        stats = traffic.traffic_loop(
            base=base_url,
            key_id=key_id,
            secret=secret,
            players=players,
            rate=rate,
            stop=stop,
            say=self.say,
            rng=random.Random(seed),
            rivalry=traffic.Rivalry(rules),
        )
        self.say(
            f"stopped: {stats.sent:,} matches sent ({stats.accepted:,} accepted, {stats.rejected:,} rejected, "
            f"{stats.errors:,} errors)"
        )

    def _setup(self, stop: threading.Event) -> tuple[str, str, list[str], dict[str, traffic.BoardRule]] | None:
        """Wait for the demo game's players (demo_load may still be running), then make a
        server key: its secret is shown once, so each run makes its own."""
        last_said = 0.0
        while not stop.is_set():
            try:
                game = Game.objects.filter(slug=names.DEMO_SLUG, players__isnull=False).first()
                if game is not None:
                    key, secret = server_key_create(game=game, name=names.KEY_NAME, scopes=("submit",))
                    players = load.demo_players()
                    rules = {
                        b.slug: traffic.BoardRule(b.order, b.mode, b.min_score, b.max_score) for b in game.boards.all()
                    }
                    connection.close()  # from here on only HTTP
                    return key.key_id, secret, players, rules
                problem = "no demo players yet (run `manage.py demo_load`)"
            except Exception as exc:  # the database may be restarting: keep waiting
                connection.close()
                problem = f"database unavailable: {exc.__class__.__name__}: {exc}"
            if time.monotonic() - last_said >= 10:
                self.say(f"waiting: {problem}")
                last_said = time.monotonic()
            stop.wait(2)
        return None
