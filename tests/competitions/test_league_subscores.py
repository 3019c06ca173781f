"""League groups on a board with sub-scores (docs/api.md §2.3, §10, §12.2): the league read, the
frozen group read (`?group=`), its CSV export and the league read of a frozen season rank a group's members by
score, then sub-scores, as tests/reference.py does, and every entry carries its value's
sub-scores; a void that changes only a player's sub-scores re-freezes that player's group alone.
Results through the signed API and the real projector; fixed dates."""

from __future__ import annotations

import csv
import io
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from competitions.models import LeagueGroupFreeze, LeagueMember
from scores.selectors import cached_board
from seasons.services import window_freeze
from tests.conftest import SignedClient
from tests.factories import BoardFactory, GameFactory, SeasonFactory, server_key
from tests.projector import projected
from tests.reference import RefBoard, Reference, RefSeason

pytestmark = pytest.mark.usefixtures("real_projector")

LEAGUE = {"tiers": ["bronze", "silver"], "size": 4, "promote": 1, "relegate": 1}
SEASON = RefSeason("s1", datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC))
# few scores, so ties are common: broken by most kills, then fewest deaths
LADDER = RefBoard("ladder", "desc", "best", 0, 4, subscores=(("kills", "desc", 0, 3), ("deaths", "asc", 0, 2)))
WINDOW = f"season:{SEASON.slug}"
BASE = "/api/v1/games/arena/boards/ladder"


@pytest.fixture
def server(transactional_db) -> SignedClient:
    game = GameFactory(slug="arena", reset_timezone="UTC")
    SeasonFactory(game=game, slug=SEASON.slug, starts_at=SEASON.starts_at, ends_at=SEASON.ends_at)
    BoardFactory(
        game=game,
        slug="ladder",
        windows=["all", "season"],
        min_score=LADDER.min_score,
        max_score=LADDER.max_score,
        league=LEAGUE,
        subscores=[{"name": n, "order": o, "min": lo, "max": hi} for n, o, lo, hi in LADDER.subscores],
    )
    key, secret = server_key(game, scopes=("submit", "moderate"))
    return SignedClient(key.key_id, secret)


def _match(match_id: str, at: datetime, player: str, score: int, subscores: dict[str, int]) -> dict:
    result: dict = {"player": player, "board": "ladder", "score": score}
    if subscores:
        result["subscores"] = subscores
    return {"match_id": match_id, "ended_at": at.isoformat().replace("+00:00", "Z"), "results": [result]}


def _groups() -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for group_id, player in LeagueMember.objects.values_list("group_id", "player__external_id"):
        out.setdefault(group_id, set()).add(player)
    return out


def _expected(ref: Reference, members: set[str]) -> list[tuple[int, str, int, dict[str, int]]]:
    """The group's entries as the reference ranks them: the season order restricted to the group."""
    order = [p for p in ref.order("ladder", WINDOW) if p in members]
    return [
        (i + 1, p, ref.values[("ladder", WINDOW, p)].value, ref.subscores_of("ladder", WINDOW, p))
        for i, p in enumerate(order)
    ]


def _shown(entries: list[dict]) -> list[tuple[int, str, int, dict[str, int]]]:
    return [(e["rank"], e["player"], e["score"], e["subscores"]) for e in entries]


def _league_read(server: SignedClient, player: str) -> dict:
    r = server.get(f"{BASE}/players/{player}/league?window={WINDOW}")
    assert r.status_code == 200, r.content
    return r.json()


def _group_csv(server: SignedClient, group: int, more: str = "") -> list[dict[str, str]]:
    r = server.get(f"{BASE}/export?window={WINDOW}&group={group}{more}")
    assert r.status_code == 200, getattr(r, "content", b"")
    assert r["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(r.streaming_content).decode())))


def _csv_shown(rows: list[dict[str, str]]) -> list[tuple[str, int, str, int, dict[str, int]]]:
    """(version, rank, player, score, sub-scores) per line."""
    return [
        (
            r["version"],
            int(r["rank"]),
            r["player"],
            int(r["score"]),
            {n: int(r[f"subscores.{n}"]) for n, *_ in LADDER.subscores},
        )
        for r in rows
    ]


def _group_read(group: int) -> dict:
    r = Client().get(f"{BASE}/standings/{WINDOW}?group={group}&limit=100")
    assert r.status_code == 200, r.content
    return r.json()


@pytest.mark.parametrize("seed", [3, 4])
def test_groups_rank_by_score_then_subscores_live_frozen_and_after_a_void(server: SignedClient, seed: int) -> None:
    rng = random.Random(seed)
    played: list[dict] = []
    players = [f"p{i:02d}" for i in range(11)]
    for n in range(36):
        at = SEASON.starts_at + timedelta(hours=rng.randint(0, 600), seconds=rng.randint(0, 59))
        subs = {name: rng.randint(lo, hi) for name, _, lo, hi in LADDER.subscores if rng.random() < 0.8}
        played.append(_match(f"m{n}", at, rng.choice(players), rng.randint(0, LADDER.max_score), subs))
    # v's best score twice: the void of the better one leaves the score and changes the sub-scores
    day = SEASON.starts_at + timedelta(days=2)
    played.append(_match("v-worse", day, "v", 4, {"kills": 0, "deaths": 2}))
    played.append(_match("v-better", day + timedelta(hours=1), "v", 4, {"kills": 3, "deaths": 0}))
    ref = Reference(boards={"ladder": LADDER}, tz="UTC", seasons=[SEASON])
    for match in played:
        assert server.post("/api/v1/games/arena/matches", match).status_code == 201
        assert ref.submit(match) == 201
    projected()
    groups = _groups()
    assert len(groups) >= 3

    for members in groups.values():  # the running season: the league read ranks the group's values
        expected = _expected(ref, members)
        assert _shown(_league_read(server, expected[-1][1])["entries"]) == expected

    assert window_freeze(board=cached_board("arena", board_slug="ladder"), window=WINDOW, reason="closed")
    before_void = {group_id: _expected(ref, members) for group_id, members in groups.items()}
    for group_id, members in groups.items():
        expected = _expected(ref, members)
        read = _group_read(group_id)
        assert (read["version"], read["total"]) == (1, len(expected))
        assert _shown(read["entries"]) == expected
        assert _shown(_league_read(server, expected[0][1])["entries"]) == expected
        # the group's CSV export: the same standings, a column per sub-score
        assert _csv_shown(_group_csv(server, group_id)) == [("1", *e) for e in expected]

    r = server.post("/api/v1/games/arena/matches/v-better/void", {"reason": "cheat"})
    assert r.status_code == 200, r.content
    ref = Reference(boards={"ladder": LADDER}, tz="UTC", seasons=[SEASON])
    for match in played:
        if match["match_id"] != "v-better":
            ref.submit(match)
    assert ref.subscores_of("ladder", WINDOW, "v") == {"kills": 0, "deaths": 2}
    v_group = LeagueMember.objects.get(player__external_id="v").group_id
    for group_id, members in groups.items():
        read = _group_read(group_id)
        # only v's group has another version: its score stayed, its sub-scores did not
        assert read["version"] == (2 if group_id == v_group else 1), group_id
        assert _shown(read["entries"]) == _expected(ref, members)
        assert _csv_shown(_group_csv(server, group_id)) == [(str(read["version"]), *e) for e in _expected(ref, members)]
    assert LeagueGroupFreeze.objects.filter(group_id=v_group).count() == 2
    assert _csv_shown(_group_csv(server, v_group, "&version=1")) == [("1", *e) for e in before_void[v_group]]
    assert _shown(_league_read(server, "v")["entries"]) == _expected(ref, groups[v_group])


def test_the_group_export_refuses_what_it_cannot_answer(server: SignedClient) -> None:
    assert server.post("/api/v1/games/arena/matches", _match("a1", SEASON.starts_at, "a", 3, {})).status_code == 201
    projected()
    group = LeagueMember.objects.get().group_id
    export = f"{BASE}/export?window={WINDOW}&group={group}"
    r = server.get(export)
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_group"  # not frozen yet
    assert window_freeze(board=cached_board("arena", board_slug="ladder"), window=WINDOW, reason="closed")
    assert [row["player"] for row in _group_csv(server, group)] == ["a"]
    assert [row["version"] for row in _group_csv(server, group, "&version=1")] == ["1"]
    for query, status, code in [
        (f"group={group + 1000}", 404, "unknown_group"),
        ("group=abc", 404, "unknown_group"),
        (f"group={group}&version=2", 404, "unknown_group"),  # the group has version 1 only
    ]:
        r = server.get(f"{BASE}/export?window={WINDOW}&{query}")
        assert (r.status_code, r.json()["error"]["code"]) == (status, code), (query, r.content)
    assert Client().get(export).status_code == 401  # signed, as every export
