"""The path users run: a submission commits and NOTIFYs, the real projector process (`manage.py
projector`) applies the match and mirrors it to Redis. Every test on a committed database has
one beside it (tests/conftest.py `projector_beside_the_test`); after a submission a test waits
with `projected()` (tests/conftest.py's SignedClient does it for every write it makes) or polls
the read itself with tests/polling.py's until. Nothing applies a submission in its own request.

`real_projector` keeps its process for the tests after it that want the same one (the same
environment: the test database, Redis, the cluster of the test's topology, the after-the-fact
checks), so a test run pays one start per environment and worker, not one per test
(`pytest_collection_modifyitems` in tests/conftest.py puts a module's tests of one topology
together). A test that starts projectors of its own (`projector_process`) or applies batches by
hand (`without_projector`) stops it first, so it never has one running beside it. Between two
tests it has applied everything the first submitted before the first's tables are emptied."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from monitoring.lag import ingest_lag
from scores.locks import ALL_LANES, APPLY
from scores.projection import pending_lag
from scores.projection.runner import owned_lanes
from tests.polling import until

REPO = Path(__file__).resolve().parents[1]
APP_NAME = "leaderboard-projector-under-test"


# Fixtures that change what the projector process must be started with (process_env): the
# cluster of the test's topology, a Redis of the test's own, the after-the-fact checks. A test
# using one gets a projector started after it.
ENVIRONMENT_FIXTURES = ("topology", "throwaway_redis", "guarded_redis", "async_checks")


def projector_start(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "projector", "--idle-seconds", "0.2", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
def projector_process(transactional_db, settings) -> Iterator[Callable[..., subprocess.Popen]]:
    """Starts `manage.py projector [args]` against the test database and Redis (PGAPPNAME names
    its connections, so the test can see them in pg_stat_activity). The test's own processes
    only: a shared one is stopped first, or it would own the lanes."""
    shared_projector_stop()
    env = process_env(settings, APP_NAME)
    started: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        proc = projector_start(env, *args)
        started.append(proc)
        return proc

    yield start
    processes_stop(started)


def processes_stop(started: list[subprocess.Popen]) -> None:
    """SIGTERM each process still running, then SIGKILL one that has not exited within 20 s."""
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def database_url(settings) -> str:
    """The test database, as a URL for a process of the service started by a test."""
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def process_env(settings, app_name: str) -> dict[str, str]:
    """The environment of a process of the service (`manage.py ...`) a test starts: the test
    database and Redis, the test's settings; PGAPPNAME names its connections, so the test can see
    them in pg_stat_activity."""
    return {
        # not pytest's name of the running test: the same process may serve the next one
        **{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
        "DATABASE_URL": database_url(settings),
        # the Redis the test reads: its own throwaway server where it has one (override_settings)
        "REDIS_URL": settings.CACHES["default"]["LOCATION"],
        # the ranking index where the test has it (tests/conftest.py's topology)
        "REDIS_CLUSTER_URL": getattr(settings, "REDIS_CLUSTER_URL", "") or "",
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test",
        "PGAPPNAME": app_name,
        # the after-the-fact checks as the test has them (tests/conftest.py: called by the test)
        "ANTICHEAT_ASYNC_CHECKS": "1" if settings.ANTICHEAT_ASYNC_CHECKS else "0",
        "SECRET_KEY": settings.SECRET_KEY,
        "SERVER_KEY_PEPPER": settings.SERVER_KEY_PEPPER,
    }


class _Shared:
    """The projector process kept between tests, the environment it was started with, and the
    connection that holds its lanes' apply locks while it waits for the next test."""

    env: dict[str, str] | None = None
    proc: subprocess.Popen | None = None
    held: psycopg.Connection | None = None


def shared_projector_stop() -> None:
    """Stops the kept projector, if one runs (its lanes are free once this returns). The lanes
    held between tests are let go first: a projector waiting for them finishes its fold and
    exits on SIGTERM at once, where it would otherwise wait out processes_stop's 20 s."""
    _projector_resume()
    if _Shared.proc is not None:
        processes_stop([_Shared.proc])
    _Shared.proc = _Shared.env = None


def _projector_hold(settings) -> None:
    """Takes every lane's apply lock (a session lock, here), after the fold in flight if any: the
    kept projector then folds nothing until `_projector_resume`. The tables are emptied after a
    test in one transaction (tests/conftest.py `_fixture_teardown`), and an idle fold taking the
    same tables in its own order could deadlock it (Postgres then aborts one of the two: the
    reset, and the next test starts on the last one's rows)."""
    _projector_resume()
    held = psycopg.connect(database_url(settings), autocommit=True)
    try:
        held.execute("SET lock_timeout = '10s'")  # a lock a test left held: the projector is not kept
        held.execute("SELECT count(pg_advisory_lock(%s, p)) FROM unnest(%s::int[]) AS u(p)", [APPLY, list(ALL_LANES)])
    except BaseException:
        held.close()
        raise
    _Shared.held = held


def _projector_resume() -> None:
    if _Shared.held is not None:
        _Shared.held.close()  # its session locks go with it
        _Shared.held = None


def _shared_projector(env: dict[str, str]) -> subprocess.Popen:
    """The kept projector if it was started with `env` and still runs; else a new one."""
    proc = _Shared.proc
    if proc is None or proc.poll() is not None or _Shared.env != env:
        shared_projector_stop()
        proc = projector_start(env)
        _Shared.proc, _Shared.env = proc, env
    return proc


@pytest.fixture(scope="session")
def shared_projector(django_db_setup) -> Iterator[None]:
    """Stops the kept projector at the end of the session, before the test database goes (set
    up after it, so torn down before it)."""
    yield
    shared_projector_stop()


@pytest.fixture
def real_projector(
    request: pytest.FixtureRequest, transactional_db, settings, shared_projector
) -> Iterator[subprocess.Popen | None]:
    """A `manage.py projector` for the test (kept from the test before when that one had the same
    environment), owning every lane before the test goes on (a submission made before would wait
    for its idle poll, not its NOTIFY). tests/conftest.py gives one to every test on a committed
    database that does not say otherwise."""
    # transactional_db above, named up front: the process sees only what is committed, and
    # pytest-django makes the test database for fixtures a test names, not ones it asks for later
    # what shapes the process's environment: the cluster, the Redis, the after-the-fact checks
    for name in ENVIRONMENT_FIXTURES:
        if name in request.fixturenames:
            request.getfixturevalue(name)
    proc = _shared_projector(process_env(settings, APP_NAME))
    _projector_resume()
    until(lambda: owned_lanes() == set(ALL_LANES), "the projector owning every lane", timeout=30, every=0.05)
    yield proc
    # Before the test's tables are emptied: whatever it submitted is applied and mirrored, so
    # nothing of this test reaches the next one's Redis. A projector that cannot get there (the
    # test stopped it, took Redis away or left a lock held) is not kept; one that is kept folds
    # nothing while the tables are emptied.
    try:
        if proc.poll() is None:
            projected("the test's submissions applied before the next test", timeout=10)
            _projector_hold(settings)
    except (Exception, pytest.fail.Exception):
        shared_projector_stop()
    if proc.poll() is not None:
        shared_projector_stop()


def projector_running() -> bool:
    """Whether the kept projector runs now (a test marked without_projector has none)."""
    return _Shared.proc is not None and _Shared.proc.poll() is None


def applied(what: str = "every acknowledged submission applied to Postgres", *, timeout: float = 10.0) -> None:
    """Waits until the projector has applied every pending match to Postgres (its backlog is
    empty), whether or not Redis has the result yet: for a test that took Redis away."""
    until(lambda: pending_lag()[0] == 0, what, timeout=timeout, every=0.02)


def projected(what: str = "every acknowledged submission on the boards", *, timeout: float = 10.0) -> None:
    """Waits until nothing acknowledged is still on its way to the boards: no pending match for
    the projector, no outbox row it has not mirrored to Redis (monitoring/lag.py, the lag
    /healthz reports). docs/api.md §4.4 promises 1 s; the deadline is generous for a shared machine."""
    until(lambda: ingest_lag().pending == 0, what, timeout=timeout, every=0.02)
