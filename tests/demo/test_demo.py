"""The demo data `make run` loads and the demo traffic it plays (demo/).

demo_load bypasses the ingest service for speed, so these tests hold it to the ingest path's
semantics: the values it writes are recomputed from the stored results with the ingest
functions, compared with a real replay through matches_submit, and with the sorted sets."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import threading
from collections import defaultdict
from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from demo import load as demo_load
from demo import names as demo_names
from demo import traffic
from demo.load import HISTORY_DAYS
from rediskit import keys
from rediskit.client import get_redis
from scores import encoding
from scores.config import parse_game_config
from scores.ingest import MatchIn, ResultIn, matches_submit
from scores.models import Board, Game, Match, Player, PlayerValue, Result, Season, ServerKey
from scores.projection.values import total_reached_at
from scores.selectors import game_config, window_expiry
from scores.services import game_config_apply
from scores.windows import windows_for
from tests.conftest import SignedClient
from tests.factories import server_key
from tests.projector import projected

SMALL = {"players": 300, "matches": 200, "seed": 7, "no_progress": True}


def load(**options) -> str:
    out = io.StringIO()
    call_command("demo_load", **{**SMALL, **options}, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def stored_values(game: Game) -> dict[tuple[int, str, int], tuple[int, int, datetime]]:
    rows = PlayerValue.objects.filter(board__game=game).values_list(
        "board_id", "window", "player_id", "value", "encoded", "reached_at"
    )
    return {(b, w, p): (v, e, r) for b, w, p, v, e, r in rows}


def recomputed_values(game: Game) -> dict[tuple[int, str, int], tuple[int, int, datetime]]:
    """What the ingest path computes from the stored results, by its own functions."""
    config = game_config(game)
    boards = {b.id: b for b in config.boards.values()}
    rows = (
        Result.objects.filter(match__game=game, match__status=Match.Status.ACCEPTED)
        .order_by("match__ended_at", "match_id", "id")
        .values_list("board_id", "player_id", "score", "match__ended_at")
    )
    values: dict[tuple[int, str, int], tuple[int, datetime]] = {}
    for board_id, player_id, score, ended_at in rows:
        board = boards[board_id]
        for window in windows_for(ended_at, game.reset_timezone, board.windows, config.seasons):
            key = (board_id, window, player_id)
            if key not in values:
                values[key] = (score, ended_at)
            elif board.mode == Board.Mode.TOTAL:
                value, at = values[key]
                values[key] = (value + score, total_reached_at(value, at, score, ended_at))
            elif encoding.encode(board, score, ended_at) > encoding.encode(board, *values[key]):
                values[key] = (score, ended_at)
    return {k: (v, encoding.encode(boards[k[0]], v, at), at) for k, (v, at) in values.items()}


def redis_values(game: Game) -> dict[tuple[int, str, int], int]:
    r = get_redis()
    out = {}
    for board in Board.objects.filter(game=game):
        for raw in (k for pattern in keys.board_patterns(board.id) for k in r.scan_iter(match=pattern)):
            key = raw.decode() if isinstance(raw, bytes) else raw
            window = keys.window_of(key)
            for member, score in r.zrange(key, 0, -1, withscores=True):
                member = member.decode() if isinstance(member, bytes) else member
                out[(board.id, window, int(member))] = int(score)
    return out


def snapshot(game: Game) -> dict:
    return {
        "players": sorted(Player.objects.filter(game=game).values_list("id", "external_id", "display_name")),
        "matches": sorted(Match.objects.filter(game=game).values_list("id", "match_id", "body_hash", "ended_at")),
        "results": Result.objects.filter(match__game=game).count(),
        "values": stored_values(game),
        "updated": sorted(PlayerValue.objects.filter(board__game=game).values_list("id", "updated_at")),
        "redis": redis_values(game),
    }


def test_demo_load_fills_postgres_with_ingest_semantics_and_redis_to_match(transactional_db) -> None:
    output = load()
    # 200 matches of history, and two on every board for the demo login (demo.names.DEMO_LOGIN)
    assert "demo data loaded: 300 players, 206 matches" in output, output
    game = Game.objects.get(slug="demo")
    assert set(Board.objects.filter(game=game).values_list("slug", flat=True)) == {"rating", "speedrun", "kills"}
    assert Player.objects.filter(game=game).count() == 300
    assert Match.objects.filter(game=game, status="accepted", server_key=None).count() == 206

    values = stored_values(game)
    assert values == recomputed_values(game)
    # Redis holds every window still within the game's retention; Postgres keeps them all
    now_unix = timezone.now().timestamp()
    live = {k for k in values if (window_expiry(k[0], window=k[1]) or now_unix + 1) > now_unix}
    assert any(w.startswith("daily:") for _, w, _ in live) and len(live) < len(values)
    assert redis_values(game) == {k: encoded for k, (_, encoded, _) in values.items() if k in live}

    # every kind of window has data, and nothing is in the future or out of bounds
    kinds = {w.split(":")[0] for _, w, _ in values}
    assert {"all", "daily", "weekly", "monthly"} <= kinds
    assert len({w for _, w, _ in values if w.startswith("daily:")}) > 20
    season = game.seasons.get(slug="s1")
    in_season = Match.objects.filter(game=game, ended_at__gte=season.starts_at, ended_at__lt=season.ends_at)
    assert ("season" in kinds) == in_season.exists()
    now = timezone.now()
    ended = Match.objects.filter(game=game).values_list("ended_at", flat=True)
    assert all(now - timedelta(days=HISTORY_DAYS) <= e < now for e in ended)
    for board in Board.objects.filter(game=game):
        scores = list(Result.objects.filter(board=board).values_list("score", flat=True))
        assert scores and all(board.min_score <= s <= board.max_score for s in scores), board.slug
    # 2-10 players per match, each at most once
    per_match = defaultdict(set)
    for match_id, player_id in Result.objects.filter(match__game=game).values_list("match_id", "player_id"):
        per_match[match_id].add(player_id)
    assert all(2 <= len(p) <= 10 for p in per_match.values())
    # display names and ids look like a game's
    player = Player.objects.get(game=game, external_id="player-000001")
    assert 1 <= len(player.display_name) <= 64


def test_demo_load_equals_a_replay_through_the_real_ingest_path(transactional_db) -> None:
    load()
    game = Game.objects.get(slug="demo")
    text = demo_names.DEMO_CONFIG.read_text(encoding="utf-8").replace('slug = "demo"', 'slug = "demo-replay"', 1)
    game_config_apply(parse_game_config(text))
    replay = Game.objects.get(slug="demo-replay")
    for season in game.seasons.all():  # made by the loader, not in the file
        Season.objects.create(
            game=replay, slug=season.slug, name=season.name, starts_at=season.starts_at, ends_at=season.ends_at
        )

    by_match: dict[int, list[ResultIn]] = defaultdict(list)
    results = Result.objects.filter(match__game=game).select_related("player", "board").order_by("id")
    for r in results:
        by_match[r.match_id].append(ResultIn(r.player.external_id, r.board.slug, r.score, None, r.metadata))
    stored = Match.objects.filter(game=game).order_by("id")
    matches = [MatchIn(m.match_id, m.ended_at, tuple(by_match[m.id])) for m in stored]
    # the stored body hash is the one a submission of that body would have
    assert [m.body_hash() for m in matches] == [m.body_hash for m in stored]
    random.Random(3).shuffle(matches)  # arrival order must not matter
    for i in range(0, len(matches), 37):
        outcomes = matches_submit(game=replay, server_key=None, matches=matches[i : i + 37])
        assert {o.status for o in outcomes} == {"accepted"}
    projected("the replay applied by the projector")

    def by_names(g: Game) -> dict:
        rows = PlayerValue.objects.filter(board__game=g).values_list(
            "board__slug", "window", "player__external_id", "value", "encoded", "reached_at", "metadata"
        )
        return {(b, w, p): rest for b, w, p, *rest in rows}

    assert by_names(game) == by_names(replay)


def test_demo_load_is_idempotent(transactional_db) -> None:
    load()
    game = Game.objects.get(slug="demo")
    before = snapshot(game)
    keys_before = ServerKey.objects.count()
    output = load(players=50, matches=10, seed=99)
    assert output.strip() == "demo data already loaded"
    assert snapshot(game) == before
    assert ServerKey.objects.count() == keys_before


def test_demo_load_puts_the_boards_back_after_a_redis_restart(transactional_db) -> None:
    load()
    game = Game.objects.get(slug="demo")
    expected = redis_values(game)
    get_redis().flushdb()
    output = load()
    assert "demo data already loaded" in output and "rebuilding" in output
    assert redis_values(game) == expected


def test_the_demo_has_a_current_season_whenever_it_is_started(transactional_db) -> None:
    """Its seasons follow the load date, never a date in games/demo.toml: loaded today, one is
    running; started again after the last one ended, the next one on the same grid is made."""
    now = timezone.now()
    load()
    game = Game.objects.get(slug="demo")
    (first,) = game.seasons.all()
    assert first.slug == "s1" and first.starts_at <= now < first.ends_at
    assert load().strip() == "demo data already loaded"  # nothing to add while it runs
    later = first.ends_at + timedelta(days=demo_load.SEASON_DAYS * 3 + 5)
    assert demo_load.demo_seasons_current(now=later) == ["s2"]
    second = game.seasons.get(slug="s2")
    assert second.starts_at <= later < second.ends_at and second.name == "Season 2"
    assert (second.starts_at - first.ends_at) % timedelta(days=demo_load.SEASON_DAYS) == timedelta(0)
    assert demo_load.demo_seasons_current(now=later) == []


def _profile_in_a_new_process(external_id: str) -> str:
    code = f"import django; django.setup(); from demo.names import profile; print(repr(profile({external_id!r})))"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_generated_data_is_deterministic_for_a_seed() -> None:
    names = [demo_names.display_name(random.Random(5)) for _ in range(3)]
    assert len(set(names)) == 1
    # the load and the traffic are separate processes: a player's traits come from the id alone,
    # the same in a fresh interpreter (another PYTHONHASHSEED), and differ from player to player
    assert demo_names.profile("player-000042") != demo_names.profile("player-000043")
    assert repr(demo_names.profile("player-000042")) == _profile_in_a_new_process("player-000042")
    assert demo_names.player_external_id(123) == "player-000123"
    rng = random.Random(1)
    bodies = [demo_names.demo_match(rng, [f"p{i}" for i in range(20)], timezone.now()) for _ in range(5)]
    rng = random.Random(1)
    again = [demo_names.demo_match(rng, [f"p{i}" for i in range(20)], timezone.now()) for _ in range(5)]
    assert [b["results"] for b in bodies] == [b["results"] for b in again]


@pytest.fixture
def demo_game(transactional_db) -> Game:
    game_config_apply(parse_game_config(demo_names.DEMO_CONFIG.read_text(encoding="utf-8")))
    return Game.objects.get(slug="demo")


@pytest.fixture
def demo_server(demo_game) -> SignedClient:
    key, secret = server_key(demo_game)
    return SignedClient(key.key_id, secret)


def test_demo_match_bodies_are_accepted_by_the_api(demo_server: SignedClient, demo_game: Game) -> None:
    rng = random.Random(11)
    players = [demo_names.player_external_id(i) for i in range(1, 40)]
    for _ in range(40):
        body = demo_names.demo_match(rng, players, timezone.now(), new_player_chance=0.2)
        response = demo_server.post("/api/v1/games/demo/matches", body)
        assert response.status_code == 201, (response.content, body)
        assert response.json() == {"match_id": body["match_id"], "status": "accepted", "duplicate": False}
    batch = [demo_names.demo_match(rng, players, timezone.now()) for _ in range(4)]
    response = demo_server.post("/api/v1/games/demo/matches/batch", {"matches": batch})
    assert response.status_code == 200, response.content
    assert [r["status"] for r in response.json()["results"]] == ["accepted"] * 4

    newcomers = Player.objects.filter(game=demo_game, external_id__startswith="rookie-")
    assert newcomers.exists() and all(p.display_name for p in newcomers)
    assert Match.objects.filter(game=demo_game).count() == 44
    # and the boards moved
    rating = demo_game.boards.get(slug="rating")
    assert get_redis().zcard(keys.board_key(rating.id, "all")) > 0


def test_traffic_loop_posts_signed_matches_over_http(live_server, demo_game: Game) -> None:
    key, secret = server_key(demo_game, name=demo_names.KEY_NAME)
    stop = threading.Event()
    lines: list[str] = []
    assert traffic.wait_healthy(live_server.url, stop, lines.append, limit=5)

    def say(line: str) -> None:
        lines.append(line)
        if len(lines) >= 8:
            stop.set()

    stats = traffic.traffic_loop(
        base=live_server.url,
        key_id=key.key_id,
        secret=secret,
        players=[demo_names.player_external_id(i) for i in range(1, 30)],
        rate=1000,
        stop=stop,
        say=say,
        rng=random.Random(4),
        log_every=0,
    )
    assert stats.sent >= 8 and stats.accepted == stats.sent and stats.errors == stats.rejected == 0, lines
    assert Match.objects.filter(game=demo_game, server_key=key).count() == stats.sent
    assert "matches sent" in lines[-1]


def test_traffic_loop_survives_an_unreachable_server(demo_game: Game) -> None:
    stop = threading.Event()
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        stop.set()  # one failure is enough to see it logged and not raised

    stats = traffic.traffic_loop(
        base="http://127.0.0.1:9",  # discard port: connection refused
        key_id="sk_x",
        secret="s",
        players=["a", "b"],
        rate=10,
        stop=stop,
        say=say,
        rng=random.Random(1),
    )
    assert stats.errors == 1 and stats.sent == 0
    assert "unreachable" in lines[0] and "retrying" in lines[0]
    assert not traffic.healthy("http://127.0.0.1:9")
