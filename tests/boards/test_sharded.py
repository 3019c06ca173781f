"""Sharded boards (docs/api.md §2.2, §5.4): a board window spread over `shards` sorted
sets reads as one board. On one Redis with shards = 4 and on the local Redis Cluster (the
topology fixture): exact ranks equal the reference model's; beyond exact_rank_limit a read
without neighbours is estimated from the histogram and stays within its stated rank_error."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boards import histogram, index, sharded
from rediskit import keys
from scores.config import ConfigError, parse_game_config
from scores.models import Board, Player
from scores.selectors import cached_board, config_cache_clear
from scores.services import game_config_apply
from tests.boards.conftest import set_keys
from tests.conftest import game_with_boards, reset_results
from tests.properties import examples
from tests.reference import RefBoard, Reference

pytestmark = pytest.mark.usefixtures("topology")

DEEP = RefBoard("deep", "desc", "best", 0, 60)
URL = "/api/v1/games/shard/boards/deep"
FIRST = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 28, 12, 5, tzinfo=UTC)


@pytest.fixture
def world(transactional_db):
    game, server = game_with_boards("shard", [(DEEP, "unique")])
    Board.objects.filter(game=game).update(shards=4)
    config_cache_clear()
    return game, server


def _match(match_id: str, at: datetime, scores: dict[str, int]) -> dict:
    results = [{"player": p, "board": "deep", "score": s} for p, s in scores.items()]
    return {"match_id": match_id, "ended_at": at.isoformat().replace("+00:00", "Z"), "results": results}


def _submit(server, ref: Reference, body: dict) -> None:
    assert server.post("/api/v1/games/shard/matches", body).status_code == ref.submit(body) == 201


players = st.dictionaries(st.from_regex(r"p[0-9a-z]{1,3}", fullmatch=True), st.integers(0, 60), min_size=1, max_size=40)


@settings(
    max_examples=examples(loop=8, deep=15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=players,
    later=st.dictionaries(st.from_regex(r"p[0-9a-z]{1,3}", fullmatch=True), st.integers(0, 60), max_size=15),
    limit=st.integers(1, 8),
    buckets=st.integers(2, 12),
)
def test_tail_estimates_stay_within_rank_error_and_the_rest_is_exact(world, first, later, limit, buckets) -> None:
    game, server = world
    reset_results()
    Board.objects.filter(game=game).update(exact_rank_limit=limit)
    config_cache_clear()
    ref = Reference({"deep": DEEP}, "UTC", [])
    _submit(server, ref, _match("m1", FIRST, first))
    cfg = cached_board("shard", board_slug="deep")
    assert cfg.shards == 4
    histogram.histogram_build(cfg, "all", buckets=buckets)
    if later:  # changes after the histogram: the bound must cover them too
        _submit(server, ref, _match("m2", LATER, later))
    ranks = {p: (r, s) for r, p, s in ref.ranks("deep", "all", False)}
    estimated = 0
    for player, (true_rank, score) in ranks.items():
        body = server.get(f"{URL}/players/{player}?around=0").json()
        assert body["score"] == score and body["total"] == len(ranks)
        if body["rank_exact"]:
            assert body["rank"] == true_rank and "rank_error" not in body
        else:
            estimated += 1
            assert true_rank > limit  # never estimated inside the exact part
            assert abs(body["rank"] - true_rank) <= body["rank_error"]
        # with neighbours, the fan-out reads them anyway: exact, and the real neighbours
        want = ref.standing("deep", "all", player, 1, False)
        near = server.get(f"{URL}/players/{player}?around=1").json()
        assert near["rank_exact"] is True
        assert (near["rank"], near["percentile"]) == (want["rank"], want["percentile"])
        assert [(e["rank"], e["player"], e["score"]) for e in near["around"]] == want["around"]
    top = server.get(f"{URL}/top?limit=100").json()
    assert [(e["rank"], e["player"], e["score"]) for e in top["entries"]] == ref.ranks("deep", "all", False)[:100]
    if len(ranks) > 30 and not later and buckets >= 8 and limit <= 2:
        assert estimated, "a deep board with a fine histogram estimates its tail"


def test_a_sharded_board_spreads_its_players_over_its_sets(world) -> None:
    game, server = world
    ref = Reference({"deep": DEEP}, "UTC", [])
    _submit(server, ref, _match("m1", FIRST, {f"p{i}": i % 60 for i in range(40)}))
    board = Board.objects.get(game=game, slug="deep")
    sizes = [index.index().zcard(k) for k in set_keys(board.id, "all")]
    assert len(sizes) == 4 and sum(sizes) == 40 and all(sizes)
    for key in set_keys(board.id, "all"):
        assert keys.parse_board_key(key)[0] == board.id


def test_an_estimated_rank_says_so_and_bounds_itself(world) -> None:
    game, server = world
    Board.objects.filter(game=game).update(exact_rank_limit=5)
    config_cache_clear()
    ref = Reference({"deep": DEEP}, "UTC", [])
    _submit(server, ref, _match("m1", FIRST, {f"p{i:02d}": i for i in range(60)}))
    histogram.histogram_build(cached_board("shard", board_slug="deep"), "all", buckets=20)
    body = server.get(f"{URL}/players/p00?around=0").json()  # last of 60
    assert body["rank_exact"] is False
    assert abs(body["rank"] - 60) <= body["rank_error"] < 60
    assert server.get(f"{URL}/players/p59?around=0").json()["rank_exact"] is True  # first: exact
    friends = server.get(f"{URL}/players/p00/friends").json()
    assert friends["rank_exact"] is True and friends["entries"][0]["board_rank"] == 60


def test_a_value_that_moved_between_the_two_round_trips_is_read_again(world) -> None:
    """A sharded standing reads the player's value, then asks every shard around that value: a
    fold in between moves the player off it. The old read then answered wrongly: 500 when the
    player showed among the neighbours at their new value, "no score" (as here) when not; the
    read now starts again from the value the player has. This is about the read: the fold (the
    projector's, waited for by the submission) is made to land between its two round trips by
    reading the first one before submitting."""
    game, server = world
    ref = Reference({"deep": DEEP}, "UTC", [])
    _submit(server, ref, _match("m1", FIRST, {"ana": 10, "bo": 20, "cy": 30}))
    cfg = cached_board("shard", board_slug="deep")
    ana = Player.objects.get(game=game, external_id="ana").pk
    (stale,) = index.batch([("zscore", keys.player_key(cfg.id, "all", cfg.shards, ana), str(ana))])
    _submit(server, ref, _match("m2", LATER, {"ana": 40}))
    assert sharded._exact(cfg, "all", ana, int(float(stale)), 1, keys.shard_keys(cfg.id, "all", cfg.shards)) is None
    body = server.get(f"{URL}/players/ana?around=1").json()
    assert (body["score"], body["rank"], body.get("degraded", False)) == (40, 1, False)
    assert [e["player"] for e in body["around"]] == ["ana", "cy"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("shards = 0", "must be at least 1"),
        ("shards = 5000", "must be at most 1024"),
        ('shards = "4"', "an integer is required"),
        ("exact_rank_limit = 0", "must be at least 1"),
    ],
)
def test_board_options_are_validated(line: str, message: str) -> None:
    text = f'[game]\nslug = "g"\nname = "G"\n[[boards]]\nslug = "b"\nname = "B"\nmax_score = 10\n{line}\n'
    with pytest.raises(ConfigError, match=message):
        parse_game_config(text)


def test_board_options_default_and_apply() -> None:
    text = '[game]\nslug = "g"\nname = "G"\n[[boards]]\nslug = "b"\nname = "B"\nmax_score = 10\n'
    spec = parse_game_config(text).boards[0]
    assert (spec.shards, spec.exact_rank_limit) == (1, 10_000)
    spec = parse_game_config(text + "shards = 8\nexact_rank_limit = 500\n").boards[0]
    assert (spec.shards, spec.exact_rank_limit) == (8, 500)


def test_resharding_in_the_game_file_rebuilds_the_board(world) -> None:
    game, server = world
    ref = Reference({"deep": DEEP}, "UTC", [])
    _submit(server, ref, _match("m1", FIRST, {f"p{i}": i % 7 for i in range(30)}))
    board = Board.objects.get(game=game, slug="deep")
    text = (
        '[game]\nslug = "shard"\nname = "Shard"\nreset_timezone = "UTC"\n'
        '[[boards]]\nslug = "deep"\nname = "Deep"\nmax_score = 60\n'
        'windows = ["all", "daily", "weekly", "monthly", "season"]\nshards = 2\n'
    )
    changes = game_config_apply(parse_game_config(text))
    assert any("shards" in line for line in changes)
    assert Board.objects.get(pk=board.pk).shards == 2
    r = index.index()
    old_layout = keys.shard_keys(board.id, "all", 4)[2:]
    assert not any(r.exists(k) for k in old_layout)
    assert sum(r.zcard(k) for k in set_keys(board.id, "all")) == 30
    top = server.get(f"{URL}/top?limit=100").json()
    assert [(e["rank"], e["player"], e["score"]) for e in top["entries"]] == ref.ranks("deep", "all", False)


def test_a_node_that_forgot_its_scripts_still_answers(world) -> None:
    """A promoted replica or a restarted node has no scripts cached: the read loads them."""
    game, server = world
    ref = Reference({"deep": DEEP}, "UTC", [])
    _submit(server, ref, _match("m1", FIRST, {f"p{i}": i for i in range(12)}))
    r = index.index()
    if index.is_cluster():
        for node in r.get_primaries():
            r.get_redis_connection(node).script_flush()
    else:
        r.script_flush()
    body = server.get(f"{URL}/players/p3?around=1").json()
    assert (body["rank"], body["rank_exact"]) == (9, True)
    assert server.get(f"{URL}/top?limit=3").json()["entries"][0]["player"] == "p11"


def _replica_script_calls() -> int:
    r = index.index()
    total = 0
    for node in r.get_replicas():
        stats = r.get_redis_connection(node).info("commandstats")
        total += stats.get("cmdstat_evalsha_ro", {}).get("calls", 0)
    return total


def test_top_pages_come_from_replicas_when_asked(world, settings) -> None:
    """REDIS_READ_FROM_REPLICAS=1: a top page (stale-tolerant) is read on replicas; a player's
    own rank stays on the primaries."""
    game, server = world
    settings.REDIS_READ_FROM_REPLICAS = True
    ref = Reference({"deep": DEEP}, "UTC", [])
    _submit(server, ref, _match("m1", FIRST, {f"p{i}": i for i in range(12)}))
    r = index.index()
    if index.is_cluster():
        for node in r.get_primaries():  # replication is asynchronous: let the replicas catch up
            r.get_redis_connection(node).execute_command("WAIT", 1, 2000)
    before = _replica_script_calls() if index.is_cluster() else 0
    top = server.get(f"{URL}/top?limit=3").json()
    assert [e["player"] for e in top["entries"]] == ["p11", "p10", "p9"]
    if index.is_cluster():
        after = _replica_script_calls()
        assert after > before
        assert server.get(f"{URL}/players/p3?around=1").json()["rank"] == 9
        assert _replica_script_calls() == after  # own rank: primaries only


def test_a_board_made_after_its_games_config_was_cached_is_read_again(db) -> None:
    """A board another process made (no save signal clears this process's cache, as in the
    projector): its shards are read again, not taken as 1 from a cached game without it; its
    first results would go to the unsharded layout readers never look at."""
    from django.db.models.signals import post_save

    from scores.selectors import config_cache_clear as clear
    from tests.factories import BoardFactory, GameFactory

    game = GameFactory(slug="grows")
    first = BoardFactory(game=game, slug="first")
    clear()
    assert index.shards_of(first.id) == first.shards  # the game's configuration is cached now
    post_save.disconnect(sender=Board, dispatch_uid="config-cache-Board-save")
    try:
        later = BoardFactory(game=game, slug="later", shards=3)
    finally:
        post_save.connect(clear, sender=Board, dispatch_uid="config-cache-Board-save")
    assert index.shards_of(later.id) == 3
