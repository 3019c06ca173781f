"""The fault suite's fast subset (bench/faults.py; `make faults` runs all of it, longer): the
real serving setup on a PostgreSQL and a Redis of its own, under signed load, with Redis hung,
Postgres stopped and the projector killed (-9). No acknowledged result may be lost, and nothing may answer a 5xx other
than the documented 503 while Postgres is down."""

from __future__ import annotations

import json

from bench import faults


def test_no_acknowledged_result_is_lost_when_redis_hangs_postgres_stops_or_the_projector_dies(capsys) -> None:
    stack = faults.stack_up()
    try:
        outcomes = [
            faults.run_fault(stack, faults.FAULTS[name], seconds=6.0, rate=8.0)
            for name in ("redis-hung", "postgres-stopped", "projector-killed")
        ]
    finally:
        stack.stop()
    faults.print_table(outcomes)
    if any(o.lost or o.recovery is None for o in outcomes):
        faults.print_logs(stack)  # pytest shows them with the failure below
    for o in outcomes:
        assert o.acknowledged > 0 and o.lost == 0 and o.server_errors == 0, o
        assert o.recovery is not None, o
    assert outcomes[1].unavailable > 0  # Postgres down: 503, not a hang
    assert outcomes[1].slowest_answer <= 1.0, outcomes[1]  # every answer within 1 s (docs/reliability.md)


def test_redis_killed_under_make_run_heals_with_every_process_up_and_nothing_lost(capsys) -> None:
    """The fault through `make run` itself (scripts/run.py supervising web, the projector, the
    worker and beat): Redis killed -9 and started again empty under signed load. Every
    acknowledged result is on the board again without a person, and every process is up at the
    end (restarted by the supervisor, or never down)."""
    stack = faults.stack_up(supervised=True)
    try:
        outcome = faults.run_fault(stack, faults.FAULTS["run-redis-killed"], seconds=20.0, rate=8.0)
    finally:
        stack.stop()
    faults.print_table([outcome])
    assert outcome.acknowledged > 0 and outcome.lost == 0 and outcome.server_errors == 0, outcome
    assert outcome.recovery is not None, outcome  # healed: writes and undegraded /top reads
    assert set(outcome.processes) >= {"web", "projector", "worker", "beat"}, outcome
    assert outcome.failed == [], outcome


def test_the_primary_killed_under_load_fails_over_to_its_synchronous_standby_with_nothing_lost(capsys) -> None:
    """kill -9 of the primary's whole node (keeper, postgres, backends) on a primary + synchronous
    standby + monitor of pg_auto_failover started under .local/faults/ha (scripts/ha.py): every
    acknowledged result is on the promoted standby, and while there is no primary the answer is a
    fast 503, never another 5xx."""
    stack = faults.stack_up(ha=True)
    try:
        health = json.loads(faults._request(stack, "GET", "/healthz")[1])
        assert health["synchronous_standby"] == "ok", health  # a 2xx is on two machines
        outcome = faults.run_fault(stack, faults.FAULTS["primary-killed"], seconds=16.0, rate=8.0)
    finally:
        stack.stop()
    faults.print_table([outcome])
    assert outcome.acknowledged > 0 and outcome.lost == 0 and outcome.server_errors == 0, outcome
    assert outcome.writes_back is not None and outcome.writes_back < 15.0, outcome
    assert outcome.slowest_submit <= 1.0, outcome


def test_redis_paused_10_s_under_make_run_answers_every_submission_2xx_and_fast(capsys) -> None:
    """Redis SIGSTOPped for 10 s (it accepts connections and answers nothing) under signed load
    on `make run`'s stack: every submission is answered 2xx, p99 under 600 ms, nothing lost
    (docs/reliability.md, "Redis hung")."""
    stack = faults.stack_up(supervised=True)
    try:
        # the fault lasts from 25 % to 60 % of the run: 10 s of a 28.6 s run
        outcome = faults.run_fault(stack, faults.FAULTS["run-redis-hung"], seconds=10.0 / 0.35, rate=8.0)
    finally:
        stack.stop()
    faults.print_table([outcome])
    assert outcome.acknowledged > 0 and outcome.lost == 0, outcome
    assert outcome.refused == {} and outcome.server_errors == 0, outcome  # every submission 2xx
    assert outcome.submit_p99 < 0.6, outcome
