"""Leagues (docs/api.md §12.2, docs/competitions.md) against real Postgres: placement never
overfills a group under concurrent first results; promotion and relegation from the frozen
group standings; a void that moves a player across the promotion line corrects their next tier."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.models import Count

from competitions.models import LeagueGroup, LeagueMember, LeagueOutcome
from scores.config import ConfigError, parse_game_config
from scores.selectors import cached_board
from seasons.services import window_freeze
from tests.conftest import SignedClient
from tests.factories import BoardFactory, GameFactory, SeasonFactory, server_key
from tests.projector import projected

pytestmark = pytest.mark.usefixtures("real_projector")  # results reach the boards as users' do

LEAGUE = {"tiers": ["bronze", "silver", "gold"], "size": 3, "promote": 1, "relegate": 1}


@pytest.fixture
def league(transactional_db) -> SignedClient:
    game = GameFactory(slug="arena")
    SeasonFactory(
        game=game, slug="s1", starts_at=datetime(2026, 9, 1, tzinfo=UTC), ends_at=datetime(2026, 10, 1, tzinfo=UTC)
    )
    SeasonFactory(
        game=game, slug="s2", starts_at=datetime(2026, 10, 1, tzinfo=UTC), ends_at=datetime(2026, 11, 1, tzinfo=UTC)
    )
    BoardFactory(game=game, slug="ladder", windows=["all", "season"], league=LEAGUE)
    key, secret = server_key(game, scopes=("submit", "moderate"))
    return SignedClient(key.key_id, secret)


def _play(server: SignedClient, match_id: str, at: str, *scores: tuple[str, int]) -> None:
    body = {
        "match_id": match_id,
        "ended_at": at,
        "results": [{"player": p, "board": "ladder", "score": s} for p, s in scores],
    }
    r = server.post("/api/v1/games/arena/matches", body)
    assert r.status_code == 201, r.content
    projected(f"match {match_id} on the boards")


def test_a_bad_league_table_is_refused_naming_the_key() -> None:
    base = '[game]\nslug = "g"\nname = "G"\n[[boards]]\nslug = "b"\nname = "B"\nmax_score = 9\nwindows = WINDOWS\n'
    for windows, table, key in [
        ('["all"]', 'tiers = ["a", "b"]\nsize = 4', "boards[0].windows"),
        ('["season"]', 'tiers = ["a", "b"]\nsize = 1', "boards[0].league.size"),
        ('["season"]', 'tiers = ["a", "a"]\nsize = 4', "boards[0].league.tiers"),
        ('["season"]', 'tiers = ["a"]\nsize = 4\npromote = 3\nrelegate = 2', "boards[0].league.relegate"),
    ]:
        with pytest.raises(ConfigError) as exc:
            parse_game_config(base.replace("WINDOWS", windows) + "[boards.league]\n" + table + "\n")
        assert exc.value.key == key


def test_concurrent_first_results_never_overfill_a_group(league: SignedClient) -> None:
    def run(i: int) -> None:
        client = SignedClient(league.key_id, league.secret)
        try:
            _play(client, f"m{i}", "2026-09-10T10:00:00Z", (f"p{i}", i))
            _play(client, f"again{i}", "2026-09-11T10:00:00Z", (f"p{i}", i + 1))  # not placed twice
        finally:
            connection.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(run, range(20)))
    assert LeagueMember.objects.count() == 20
    assert not LeagueMember.objects.filter(group__isnull=True).exists()
    counted = LeagueGroup.objects.annotate(n=Count("members"))
    assert all(g.n == g.size <= 3 for g in counted)
    assert sum(g.n for g in counted) == 20 and counted.count() >= 7  # ceil(20 / 3)
    assert set(LeagueMember.objects.values_list("tier", flat=True)) == {0}  # new players: the lowest tier


def test_promotion_relegation_and_a_void_that_corrects_the_next_tier(league: SignedClient) -> None:
    # one group of three in bronze, s1: a 30, b 20, c 10
    _play(league, "a1", "2026-09-10T10:00:00Z", ("a", 30))
    _play(league, "b1", "2026-09-10T11:00:00Z", ("b", 20))
    _play(league, "c1", "2026-09-10T12:00:00Z", ("c", 10))
    board = cached_board("arena", board_slug="ladder")
    window_freeze(board=board, window="season:s1", reason="season closed")
    tiers = dict(LeagueOutcome.objects.values_list("player__external_id", "tier_next"))
    assert tiers == {"a": 1, "b": 0, "c": 0}  # bronze is the lowest: nobody goes below it

    # a cheated: the void re-freezes s1 and b now crosses the promotion line
    r = league.post("/api/v1/games/arena/matches/a1/void", {"reason": "cheat"})
    assert r.status_code == 200
    tiers = dict(LeagueOutcome.objects.values_list("player__external_id", "tier_next"))
    assert tiers == {"a": 0, "b": 1, "c": 0}

    # s2: b plays in silver, the others in bronze
    _play(league, "a2", "2026-10-10T10:00:00Z", ("a", 5))
    _play(league, "b2", "2026-10-10T10:00:00Z", ("b", 5))
    placed = dict(LeagueMember.objects.filter(season__slug="s2").values_list("player__external_id", "tier"))
    assert placed == {"a": 0, "b": 1}

    read = league.get("/api/v1/games/arena/boards/ladder/players/b/league?window=season:s2")
    assert read.status_code == 200, read.content
    assert read.json() | {"group": None} == {
        "window": "season:s2",
        "tier": "silver",
        "group": None,
        "entries": [{"rank": 1, "player": "b", "display_name": "", "score": 5}],
        "promote_until": 1,
        "relegate_from": 2,  # alone in the group: promotion wins, nobody is relegated
    }
    s1 = league.get("/api/v1/games/arena/boards/ladder/players/c/league?window=season:s1").json()
    assert [(e["rank"], e["player"], e["score"]) for e in s1["entries"]] == [(1, "b", 20), (2, "c", 10)]
    assert s1["tier"] == "bronze" and s1["promote_until"] == 1 and s1["relegate_from"] is None
    assert league.get("/api/v1/games/arena/boards/ladder/players/c/league?window=all").status_code == 400
