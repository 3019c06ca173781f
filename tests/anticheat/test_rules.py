"""Each anti-cheat rule, and its thresholds in the configuration."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from anticheat.after import board_stats_refresh
from anticheat.models import AuditEntry, BoardStats
from scores.config import ConfigError, parse_game_config
from scores.models import Board, Match, Result
from tests.anticheat.conftest import URL, submit, top
from tests.conftest import SignedClient
from tests.factories import server_key

# The matches below end at submit's fixed date; the statistics look 7 days back from `now`
# (docs/moderation.md, "board_top", "server_outlier"), so they are computed as of an hour after
# it, not as of the clock, which overtakes the fixed date.
STATS_NOW = datetime(2026, 11, 28, 13, tzinfo=UTC)


def test_max_gain_rejects_and_audits_and_stores_nothing(gs) -> None:
    response = submit(gs, "g1", [{"player": "a", "board": "points", "score": 300}] * 2)
    assert response.status_code == 400 and response.json()["error"]["code"] == "rule_rejected"
    assert not Match.objects.exists() and not Result.objects.exists()
    entry = AuditEntry.objects.get(action="reject")
    assert entry.match_ref == "g1" and entry.details["rule"] == "max_gain" and entry.details["gain"] == 600
    assert submit(gs, "g2", [{"player": "a", "board": "points", "score": 500}]).status_code == 201


def test_max_rate_rejects_matches_beyond_the_limit_in_a_batch(gs) -> None:
    matches = [
        {
            "match_id": f"r{i}",
            "ended_at": "2026-11-28T12:00:00Z",
            "results": [{"player": "a", "board": "rating", "score": 10}],
        }
        for i in range(7)
    ]
    results = gs.post(f"{URL}/matches/batch", {"matches": matches}).json()["results"]
    assert [r["status"] for r in results] == ["accepted"] * 5 + ["rejected"] * 2
    assert results[5]["error"]["code"] == "rule_rejected"
    # a retry of an accepted match is a duplicate, not a new submission
    again = submit(gs, "r0", matches[0]["results"])
    assert again.status_code == 200 and again.json()["duplicate"]


def test_player_history_holds_far_above_the_players_best(gs) -> None:
    submit(gs, "a1", [{"player": "a", "board": "golf", "score": 150}])  # value part 50
    assert submit(gs, "a2", [{"player": "a", "board": "golf", "score": 40}]).json()["status"] == "accepted"  # 160 < 250
    assert submit(gs, "a3", [{"player": "newbie", "board": "golf", "score": 18}]).json()["status"] == "accepted"
    submit(gs, "b1", [{"player": "b", "board": "golf", "score": 190}])  # value part 10
    assert submit(gs, "b2", [{"player": "b", "board": "golf", "score": 100}]).json()["status"] == "held"  # 100 > 50
    assert top("golf") == [("newbie", 18), ("a", 40), ("b", 190)]


def test_board_top_holds_beyond_the_recent_top_percentile(arena, gs) -> None:
    Board.objects.filter(slug="golf").update(anticheat={"top_min_sample": 10, "history_factor": 0})
    for i in range(20):
        submit(gs, f"t{i}", [{"player": f"p{i}", "board": "golf", "score": 150 + i}])  # parts 31..50
    assert board_stats_refresh(now=STATS_NOW) == 5
    stats = BoardStats.objects.get(board__slug="golf")
    assert stats.sample == 20 and stats.top_value_part == 50
    from scores.selectors import config_cache_clear

    config_cache_clear()
    assert submit(gs, "x1", [{"player": "x", "board": "golf", "score": 130}]).json()["status"] == "accepted"  # 70 <= 75
    assert submit(gs, "x2", [{"player": "y", "board": "golf", "score": 120}]).json()["status"] == "held"  # 80 > 75


def test_server_outlier_holds_the_out_of_line_servers_results(arena) -> None:
    Board.objects.filter(slug="golf").update(anticheat={"server_min_results": 3, "history_factor": 0})
    servers = []
    for name in ("s1", "s2", "s3", "rogue"):
        key, secret = server_key(arena, name=name)
        servers.append(SignedClient(key.key_id, secret))
    for n, server in enumerate(servers):
        for i in range(3):
            score = 30 if server is servers[-1] else 150 + n + i
            submit(server, f"{n}-{i}", [{"player": f"p{n}{i}", "board": "golf", "score": score}])
    board_stats_refresh(now=STATS_NOW)
    from scores.selectors import config_cache_clear

    config_cache_clear()
    assert BoardStats.objects.get(board__slug="golf").outlier_keys == [Match.objects.get(match_id="3-0").server_key_id]
    assert submit(servers[-1], "later", [{"player": "q", "board": "golf", "score": 150}]).json()["status"] == "held"
    assert submit(servers[0], "fine", [{"player": "q", "board": "golf", "score": 150}]).json()["status"] == "accepted"


BASE = """
[game]
slug = "g"
name = "G"
[[boards]]
slug = "b"
name = "B"
max_score = 100
"""


def test_thresholds_in_the_config_file() -> None:
    spec = parse_game_config(BASE + "anticheat = { max_gain = 50, history_factor = 3.5 }\n")
    assert dict(spec.boards[0].anticheat) == {"max_gain": 50, "history_factor": 3.5}


@pytest.mark.parametrize(
    "table, key",
    [
        ("{ nope = 1 }", "boards[0].anticheat.nope"),
        ('{ max_gain = "x" }', "boards[0].anticheat.max_gain"),
        ("{ max_gain = 1.5 }", "boards[0].anticheat.max_gain"),
        ("{ history_factor = -1 }", "boards[0].anticheat.history_factor"),
        ("{ top_percentile = 100 }", "boards[0].anticheat.top_percentile"),
        ("3", "boards[0].anticheat"),
    ],
)
def test_bad_thresholds_name_the_key(table: str, key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_game_config(BASE + f"anticheat = {table}\n")
    assert exc.value.key == key
