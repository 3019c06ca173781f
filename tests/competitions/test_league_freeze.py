"""League groups frozen as standings of their own (docs/competitions.md, "Leagues"), against
tests/reference.py: at a season's freeze each group's standings are the reference's season order
restricted to the group, read through the standings read (`?group=`) and the league read; the
next season's tiers are RefLeague's from those frozen orders; a void that moves a player across
the promotion line re-freezes that group alone and corrects the next season's tier, moving a
player the next season already placed. Fixed dates: nothing depends on today's."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Count, F
from django.test import Client

from competitions.models import LeagueGroup, LeagueGroupFreeze, LeagueMember, LeagueOutcome
from scores.selectors import cached_board
from seasons.services import window_freeze
from tests.conftest import SignedClient
from tests.factories import BoardFactory, GameFactory, SeasonFactory, server_key
from tests.projector import projected
from tests.reference import RefBoard, Reference, RefLeague, RefSeason

pytestmark = pytest.mark.usefixtures("real_projector")  # results reach the boards as users' do

LEAGUE = {"tiers": ["bronze", "silver", "gold"], "size": 4, "promote": 1, "relegate": 1}
SEASONS = [
    RefSeason("s0", datetime(2026, 8, 1, tzinfo=UTC), datetime(2026, 9, 1, tzinfo=UTC)),
    RefSeason("s1", datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC)),
    RefSeason("s2", datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)),
]
STANDINGS = "/api/v1/games/arena/boards/ladder/standings"


@pytest.fixture
def league(transactional_db) -> SignedClient:
    game = GameFactory(slug="arena")
    for s in SEASONS:
        SeasonFactory(game=game, slug=s.slug, starts_at=s.starts_at, ends_at=s.ends_at)
    BoardFactory(game=game, slug="ladder", windows=["all", "season"], league=LEAGUE)
    key, secret = server_key(game, scopes=("submit", "moderate"))
    return SignedClient(key.key_id, secret)


def _match(match_id: str, at: datetime, player: str, score: int) -> dict:
    return {
        "match_id": match_id,
        "ended_at": at.isoformat().replace("+00:00", "Z"),
        "results": [{"player": player, "board": "ladder", "score": score}],
    }


def _play(server: SignedClient, match: dict, ref: Reference | None = None) -> None:
    r = server.post("/api/v1/games/arena/matches", match)
    assert r.status_code == 201, r.content
    projected(f"match {match['match_id']} on the boards")
    if ref is not None:
        assert ref.submit(match) == 201


def _freeze(season: str) -> None:
    assert window_freeze(board=cached_board("arena", board_slug="ladder"), window=f"season:{season}", reason="closed")


def _groups(season: str) -> dict[int, tuple[int, set[str]]]:
    """group id -> (tier, its members)."""
    out: dict[int, tuple[int, set[str]]] = {}
    for group_id, tier, player in LeagueMember.objects.filter(season__slug=season).values_list(
        "group_id", "tier", "player__external_id"
    ):
        out.setdefault(group_id, (tier, set()))[1].add(player)
    return out


def _group_read(season: str, group: int) -> dict:
    r = Client().get(f"{STANDINGS}/season:{season}?group={group}&limit=100")
    assert r.status_code == 200, r.content
    return r.json()


def _outcome(season: str) -> dict[str, int]:
    return dict(LeagueOutcome.objects.filter(season__slug=season).values_list("player__external_id", "tier_next"))


def _sizes_are_the_members() -> None:
    counted = LeagueGroup.objects.annotate(n=Count("members"))
    assert all(g.n == g.size <= LEAGUE["size"] for g in counted), [(g.id, g.n, g.size) for g in counted]


@pytest.mark.parametrize("seed", [27, 28])
def test_each_group_is_frozen_in_the_reference_order_and_settles_the_next_tiers(league, seed: int) -> None:
    rng = random.Random(seed)
    ref = Reference(boards={"ladder": RefBoard("ladder", "desc", "best", 0, 10_000_000)}, tz="UTC", seasons=SEASONS)
    model = RefLeague(len(LEAGUE["tiers"]), LEAGUE["promote"], LEAGUE["relegate"])
    players = [f"p{i:02d}" for i in range(14)]
    tier_now = {p: 0 for p in players}  # new players start in the lowest tier
    n = 0
    for season in SEASONS[:2]:
        playing = rng.sample(players, rng.randint(9, 14))
        for _ in range(40):
            n += 1
            at = season.starts_at + timedelta(hours=rng.randint(0, 600), seconds=rng.randint(0, 59))
            # scores from a small range: ties, broken by the second reached, then the player id
            _play(league, _match(f"m{n}", at, rng.choice(playing), rng.randint(0, 12)), ref)
        _freeze(season.slug)
        _sizes_are_the_members()
        order = ref.order("ladder", f"season:{season.slug}")
        expected_next: dict[str, int] = {}
        for group_id, (tier, members) in _groups(season.slug).items():
            assert all(tier_now[p] == tier for p in members)  # placed in the tier the last season gave
            group_order = [p for p in order if p in members]
            read = _group_read(season.slug, group_id)
            assert (read["group"], read["version"], read["total"]) == (str(group_id), 1, len(group_order))
            assert [(e["rank"], e["player"], e["score"]) for e in read["entries"]] == [
                (i + 1, p, ref.values[("ladder", f"season:{season.slug}", p)].value) for i, p in enumerate(group_order)
            ]
            # the league read of a frozen season shows the same frozen group
            league_read = league.get(
                f"/api/v1/games/arena/boards/ladder/players/{group_order[0]}/league?window=season:{season.slug}"
            ).json()
            assert [e["player"] for e in league_read["entries"]] == group_order
            expected_next |= model.next_tiers(group_order, {p: tier for p in members})
        assert _outcome(season.slug) == expected_next
        tier_now |= expected_next


def test_a_void_across_the_promotion_line_refreezes_its_group_and_moves_the_next_seasons_places(league) -> None:
    s1 = SEASONS[1].starts_at + timedelta(days=3)
    # s1, bronze: group one a 40, b 30, c 20, d 10; group two e 50, f 5, g 4, h 3
    for i, (player, score) in enumerate([("a", 40), ("b", 30), ("c", 20), ("d", 10)]):
        _play(league, _match(f"{player}1", s1 + timedelta(minutes=i), player, score))
    for i, (player, score) in enumerate([("e", 50), ("f", 5), ("g", 4), ("h", 3)]):
        _play(league, _match(f"{player}1", s1 + timedelta(hours=1, minutes=i), player, score))
    s2 = SEASONS[2].starts_at + timedelta(days=3)
    _play(league, _match("e2", s2, "e", 1))  # e plays s2 before s1 is frozen: placed in bronze for now
    assert _groups("s2") == {LeagueMember.objects.get(player__external_id="e", season__slug="s2").group_id: (0, {"e"})}

    _freeze("s1")
    assert _outcome("s1") == {"a": 1, "b": 0, "c": 0, "d": 0, "e": 1, "f": 0, "g": 0, "h": 0}
    e_s2 = LeagueMember.objects.get(player__external_id="e", season__slug="s2")
    assert e_s2.tier == 1  # corrected by the freeze: e won a group
    one, two = sorted(_groups("s1"))
    assert [e["player"] for e in _group_read("s1", one)["entries"]] == ["a", "b", "c", "d"]

    _play(league, _match("a2", s2 + timedelta(minutes=1), "a", 1))  # silver, with e
    _play(league, _match("b2", s2 + timedelta(minutes=2), "b", 1))  # bronze
    assert {p: t for t, ps in _groups("s2").values() for p in ps} == {"a": 1, "b": 0, "e": 1}

    r = league.post("/api/v1/games/arena/matches/a1/void", {"reason": "cheat"})
    assert r.status_code == 200, r.content
    # a's group is frozen again without a; b crosses the promotion line; group two is untouched
    read = _group_read("s1", one)
    assert read["version"] == 2 and read["total"] == 3
    assert [(e["rank"], e["player"], e["score"]) for e in read["entries"]] == [(1, "b", 30), (2, "c", 20), (3, "d", 10)]
    assert _group_read("s1", two)["version"] == 1
    assert LeagueGroupFreeze.objects.filter(group_id=two).count() == 1
    assert _outcome("s1") == {"a": 0, "b": 1, "c": 0, "d": 0, "e": 1, "f": 0, "g": 0, "h": 0}
    # the next season's places follow: a down to bronze, b up to silver, each in a group of that tier
    groups = _groups("s2")
    assert {p: t for t, ps in groups.values() for p in ps} == {"a": 0, "b": 1, "e": 1}
    assert not LeagueMember.objects.exclude(tier=F("group__tier")).exists()  # every member in a group of their tier
    _sizes_are_the_members()
    b_read = league.get("/api/v1/games/arena/boards/ladder/players/b/league?window=season:s2").json()
    assert b_read["tier"] == "silver" and [e["player"] for e in b_read["entries"]] == [
        "e",
        "b",
    ]  # 1 each: e reached it first


def test_the_group_standings_read_refuses_what_it_cannot_answer(league) -> None:
    s1 = SEASONS[1].starts_at + timedelta(days=3)
    _play(league, _match("a1", s1, "a", 5))
    group = LeagueMember.objects.get().group_id
    r = Client().get(f"{STANDINGS}/season:s1?group={group}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_group"  # not frozen yet
    _freeze("s1")
    first = _group_read("s1", group)["entries"][0]
    assert first["player"] == "a" and "subscores" not in first  # a board without sub-scores
    for query, status, code in [
        (f"season:s1?group={group + 1000}", 404, "unknown_group"),
        ("season:s1?group=abc", 404, "unknown_group"),
        (f"season:s2?group={group}", 404, "unknown_group"),  # another season's window
        (f"season:s1?group={group}&region=eu", 404, "unknown_region"),  # and a region's window has no groups
    ]:
        r = Client().get(f"{STANDINGS}/{query}")
        assert (r.status_code, r.json()["error"]["code"]) == (status, code), (query, r.content)
    whole = Client().get(f"{STANDINGS}/season:s1").json()  # the season's own standings, unchanged
    assert "group" not in whole and [e["player"] for e in whole["entries"]] == ["a"]
