"""leaderboard_project/database.py: multi-host DATABASE_URLs, and one wait for the pool per
request while Postgres is unreachable (the fault suite measures the answers' times end to end)."""

from __future__ import annotations

import pytest
from psycopg_pool import ConnectionPool, PoolTimeout

from leaderboard_project.database import (
    UNREACHABLE_WAIT,
    _pool_budget,
    connect_params,
    database_from_url,
    pool_unreachable,
)
from scripts.services import spare_port
from tests.polling import until


def test_a_url_with_several_hosts_becomes_libpq_host_and_port_lists_with_its_query_as_options() -> None:
    db = database_from_url(
        "postgres://lb:s%40cret@db1:5432,db2:5433,[::1]:5434/leaderboard?target_session_attrs=read-write&sslmode=require",
        options={"connect_timeout": 2},
    )
    assert (db["HOST"], db["PORT"], db["USER"], db["PASSWORD"], db["NAME"]) == (
        "db1,db2,::1", "5432,5433,5434", "lb", "s@cret", "leaderboard",
    )  # fmt: skip
    assert db["OPTIONS"] == {"target_session_attrs": "read-write", "sslmode": "require", "connect_timeout": 2}
    params = connect_params(db)
    assert params["host"] == "db1,db2,::1" and params["target_session_attrs"] == "read-write"
    one_port = database_from_url("postgres://u@h1:5432,h2:5432/db", options={})
    assert one_port["PORT"] == "5432"
    with pytest.raises(ValueError):
        database_from_url("postgres://u@h1:5432,h2/db", options={})


def test_the_services_connections_run_without_jit_and_keep_server_options_from_the_url(db) -> None:
    """JIT compiled the projector's fold at every execution after a burst of writes (~2.4 s for
    a statement of milliseconds: docs/operations.md, "JIT"): every connection the service makes,
    Django's and the projector's own (connect_params), has it off."""
    import psycopg
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SHOW jit")
        assert cur.fetchone() == ("off",)
    with psycopg.connect(**connect_params(settings.DATABASES["default"])) as own:
        assert own.execute("SHOW jit").fetchone() == ("off",)
    from_url = database_from_url(
        "postgres://u@h/db?options=-c%20statement_timeout%3D5000", options={"options": "-c jit=off"}
    )
    assert from_url["OPTIONS"]["options"] == "-c statement_timeout=5000 -c jit=off"


def test_a_request_waits_for_an_unreachable_database_once_not_on_every_query() -> None:
    unreachable = f"host=127.0.0.1 port={spare_port()} dbname=x connect_timeout=2"
    pool = ConnectionPool(unreachable, min_size=0, max_size=1, timeout=0.2, open=False)
    pool.open()
    token = _pool_budget.set([0.2])
    try:
        with pytest.raises(PoolTimeout, match="couldn't get a connection"):  # the one wait
            pool.getconn()
        with pytest.raises(PoolTimeout, match="already spent"):  # then at once
            pool.getconn()
    finally:
        _pool_budget.reset(token)
        pool.close()


def test_a_pool_that_cannot_reach_postgres_makes_requests_wait_briefly_until_it_connects_again(db) -> None:
    """While the pool's last connection attempt failed, a request's wait is DB_UNREACHABLE_WAIT,
    not DB_POOL_TIMEOUT (queued requests would add their waits up past 1 s); the pool's first
    connection once Postgres answers ends that."""
    from tests.factories import migrated_test_database_url

    target = {"conninfo": f"host=127.0.0.1 port={spare_port()} dbname=x connect_timeout=2"}
    pool = ConnectionPool(lambda: target["conninfo"], min_size=1, max_size=1, timeout=0.5, open=False)
    pool.open()
    token = _pool_budget.set([0.5])
    try:
        until(lambda: pool_unreachable(pool), "the pool's first attempt failing")
        with pytest.raises(PoolTimeout, match=f"after {UNREACHABLE_WAIT:.2f} sec"):
            pool.getconn()
        target["conninfo"] = migrated_test_database_url()  # Postgres is back
        until(lambda: not pool_unreachable(pool), "the pool reconnecting on its own")
        _pool_budget.set([0.5])
        conn = pool.getconn()
        assert conn.execute("SELECT 1").fetchone() == (1,)
        pool.putconn(conn)
    finally:
        _pool_budget.reset(token)
        pool.close()
