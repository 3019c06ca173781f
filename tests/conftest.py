from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connections
from django.db.models.signals import pre_save
from django.test import Client, TransactionTestCase
from leaderboard_client.signing import sign
from redis.cluster import RedisCluster

from boards import index
from boards.api import TopApi
from boards.profiles import local_caches_clear
from rediskit import keys
from rediskit.breaker import breakers_reset
from rediskit.client import get_redis
from scores.models import Board
from scores.selectors import config_cache_clear
from tests.factories import BoardFactory, GameFactory, SeasonFactory, server_key
from tests.projector import (  # noqa: F401 (fixtures for every directory)
    projected,
    projector_process,
    projector_running,
    real_projector,
    shared_projector,
    shared_projector_stop,
)

# Tests that share something of which a test run has only one: under pytest-xdist each group
# runs on one worker, one test after another (pytest_xdist_make_scheduler below). The rest
# spread over the workers test by test, each worker with a database, a Redis db and a projector
# of its own (leaderboard_project/settings_test.py, tests/projector.py).
XDIST_GROUPS = {
    # the fault suite's servers, under the fixed .local/faults/ (bench/faults.py)
    "tests/bench/test_faults.py": "faults",
    # `bench --smoke`, run once per module for its tests (a module-scoped fixture): spread over
    # two workers, its ~95 s of setup ran twice
    "tests/bench/test_smoke.py": "smoke",
    # the browsers, and the Celery worker kept per module beside the served pages
    # (tests/e2e/conftest.py): once on one worker rather than once on each
    "tests/e2e/": "e2e",
}
CLUSTER_GROUP = "cluster"  # the run's one local Redis Cluster, flushed by its tests (topology)


def xdist_group(nodeid: str) -> str | None:
    """The group a test runs in under pytest-xdist, if any, from its id alone (the scheduler
    sees ids, not items): a cluster copy of a two-topology test (`[cluster]`, `[cluster-...]`,
    `[...-cluster]`), or a module (or directory) of XDIST_GROUPS."""
    path, _, name = nodeid.partition("::")
    params = name.partition("[")[2].rstrip("]")
    if CLUSTER_GROUP in params.split("-"):
        return CLUSTER_GROUP
    return next((group for prefix, group in XDIST_GROUPS.items() if path.startswith(prefix)), None)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling with a scope per group and one per test outside any group: the
    biggest scope goes out first, the other workers share the rest test by test. (Not xdist's
    own `--dist loadgroup`: it marks groups by rewriting `item._nodeid`, which pytest 9 no
    longer reads, so its groups silently spread over every worker.)"""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid) or nodeid

    return GroupScheduling(config, log)


def sharding_irrelevant(item: pytest.Item) -> bool:
    """A cluster copy of a test marked `one_redis("<why sharding plays no part>")`: refusals,
    parsing and credentials are decided before any Redis is read, so a second run on the
    cluster would only repeat the first."""
    callspec = getattr(item, "callspec", None)
    return (
        callspec is not None
        and callspec.params.get("topology") == "cluster"
        and item.get_closest_marker("one_redis") is not None
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Cluster copies of tests about something else are dropped (`one_redis`).

    In a module with tests on the real projector, the tests that want the same projector
    process (one topology, on the real projector or not) run one after the other, each group in
    its written order: tests/projector.py keeps the process between them, and a module pays one
    start per topology instead of one per test."""

    def module(item: pytest.Item) -> str:
        return item.nodeid.partition("::")[0]

    def group(item: pytest.Item) -> tuple[str, bool]:
        callspec = getattr(item, "callspec", None)
        return (str(callspec.params.get("topology", "")) if callspec else "", not projector_wanted(item))

    dropped = [item for item in items if sharding_irrelevant(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not sharding_irrelevant(item)]
    grouped = {module(item) for item in items if projector_wanted(item)}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        first.setdefault(module(item), i)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(
        key=lambda item: (
            first[module(item)],
            group(item) if module(item) in grouped else ("", False),
            order[id(item)],
        )
    )


# Rows the migrations write once and no test changes: kept between tests, so the reset need not
# write them again (Django's flush empties them and recreates them through post_migrate).
KEPT_TABLES = frozenset({"django_migrations", "django_content_type", "auth_permission"})
_django_fixture_teardown = TransactionTestCase._fixture_teardown


def _fixture_teardown(self: TransactionTestCase) -> None:
    """The reset after a test on a committed database, cheaper than Django's flush: the rows of
    the tables that hold any (usually a handful of some fifty) deleted in one transaction,
    KEPT_TABLES left as they are, where the flush truncated every table and recreated every
    content type and permission (half a second a test here). A test that asks for more (reset
    sequences, serialized rollback, a subset of apps) gets Django's own."""
    if self.reset_sequences or self.serialized_rollback or self.available_apps is not None:
        return _django_fixture_teardown(self)
    for name in self._databases_names(include_mirrors=False):
        connection = connections[name]
        tables = [t for t in connection.introspection.django_table_names(only_existing=True) if t not in KEPT_TABLES]
        with connection.cursor() as cur:
            cur.execute(
                " UNION ALL ".join(
                    f"SELECT %s WHERE EXISTS (SELECT 1 FROM {connection.ops.quote_name(t)})" for t in tables
                ),
                tables,
            )
            filled = [connection.ops.quote_name(t) for (t,) in cur.fetchall()]
            if filled:
                # a test's few rows: DELETE, with the foreign keys' triggers off for it, costs a
                # fraction of a TRUNCATE, which makes a new file per table
                try:
                    cur.execute(
                        "BEGIN; SET LOCAL session_replication_role = replica; "
                        + "".join(f"DELETE FROM {t}; " for t in filled)
                        + "COMMIT"
                    )
                except DatabaseError:  # a test database user that is no superuser may not turn them off
                    cur.execute("ROLLBACK")
                    cur.execute(f"TRUNCATE {', '.join(filled)} CASCADE")


TransactionTestCase._fixture_teardown = _fixture_teardown


def projector_wanted(item: pytest.Item) -> bool:
    """Whether the test runs beside the real projector: every test on a committed database (what
    a test commits is what a projector can see), but those that start projectors of their own
    (`projector_process`) or are the projector themselves, applying batches by hand
    (`@pytest.mark.without_projector("<why>")`)."""
    names = item.fixturenames  # type: ignore[attr-defined]  (real_projector names transactional_db)
    return (
        "transactional_db" in names
        and "projector_process" not in names
        and item.get_closest_marker("without_projector") is None
    )


@pytest.fixture(autouse=True)
def projector_beside_the_test(request: pytest.FixtureRequest, redis_clean: None, no_async_anticheat: None) -> None:
    """The path users run: a submission a test makes is applied by the real projector process
    (tests/projector.py), kept between tests. A test without one never has one beside it.
    After the test Redis is emptied and the checks set: the projector may bring a Redis of the
    test's own with it (tests/projector.py ENVIRONMENT_FIXTURES)."""
    if projector_wanted(request.node):
        request.getfixturevalue("real_projector")
    else:
        shared_projector_stop()


@pytest.fixture(autouse=True)
def redis_clean() -> Iterator[None]:
    """Each test starts with an empty Redis database (the test database, never db 0)."""
    r = get_redis()
    assert r.connection_pool.connection_kwargs.get("db", 0) != 0 or r.dbsize() == 0, "refusing to flush Redis db 0"
    r.flushdb()
    mark_index_built()
    TopApi._local.clear()
    local_caches_clear()
    config_cache_clear()
    breakers_reset()
    yield


def mark_index_built() -> None:
    """An empty Redis over an empty database is a complete index: say so, as a full rebuild
    would (readers answer from Postgres, degraded, while the marker is missing)."""
    get_redis().set(keys.BUILT_MARKER, "tests")
    if index.is_cluster():
        index.mark_built("tests")


def index_flush() -> None:
    """Empty the ranking index where it is not the test Redis db (the tests' cluster)."""
    if index.is_cluster():
        index.index().flushall(target_nodes=RedisCluster.PRIMARIES)


class SignedClient:
    """A game server: signs every request as docs/api.md §3.1 says.

    A write it makes that the projector applies (a match, a batch, a moderation call) is
    answered once durable; with the real projector beside the test, `request` then waits until
    the projector has applied and mirrored everything acknowledged (tests/projector.py
    `projected`), so the test reads what a client sees once docs/api.md §4.4's second has passed.
    `at_the_answer()` is the same server returning at the answer, for a test about what happens
    before (or with Redis away, where the mirror cannot be waited for)."""

    def __init__(self, key_id: str, secret: str, client: Client | None = None, *, settle: bool = True) -> None:
        self.key_id, self.secret = key_id, secret
        self.client = client or Client()
        self.settle = settle

    def at_the_answer(self) -> SignedClient:
        return SignedClient(self.key_id, self.secret, self.client, settle=False)

    def request(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None, **headers: str):
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        sig = sign(self.secret, method, path, data)
        h = {"X-Key-Id": self.key_id, "X-Signature": sig, **headers}
        response = self.client.generic(method, path, data=data, content_type="application/json", headers=h)
        if self.settle and method != "GET" and response.status_code < 300 and projector_running():
            projected(f"{method} {path} applied by the projector")
        return response

    def post(self, path: str, body: Any = None, **kw: Any):
        return self.request("POST", path, body, **kw)

    def get(self, path: str, **kw: Any):
        return self.request("GET", path, **kw)


@pytest.fixture
def game(transactional_db):
    g = GameFactory(slug="chess")
    BoardFactory(game=g, slug="rating")
    BoardFactory(game=g, slug="golf", order="asc", min_score=18, max_score=200)
    BoardFactory(game=g, slug="points", mode="total", max_score=1000)
    SeasonFactory(game=g, slug="s1")
    return g


@pytest.fixture
def server(game) -> SignedClient:
    key, secret = server_key(game, scopes=("submit", "moderate", "events"))
    return SignedClient(key.key_id, secret)


@pytest.fixture(autouse=True)
def no_async_anticheat(settings) -> None:
    """Tests run the after-the-fact checks by calling them; nothing is queued on a broker."""
    settings.ANTICHEAT_ASYNC_CHECKS = False


@pytest.fixture
def async_checks(settings) -> None:
    """The after-the-fact checks queued as in production, by this process and by the projector
    beside the test (tests/projector.py starts it with this setting); no Celery worker runs them."""
    settings.ANTICHEAT_ASYNC_CHECKS = True


def reset_results() -> None:
    """Start afresh inside one test: hypothesis runs many examples in one test's database.
    Empties what submissions write (Postgres and the test Redis db) and the read caches."""
    from django.db import connection, transaction

    # A real projector may be folding the example before: its statement locks scores_pending,
    # then scores_match, then scores_result, ... A TRUNCATE taking them in another order
    # deadlocked with it (Postgres then aborts one of the two: the test, if it is the victim).
    # Taking them in the projector's order first makes the reset wait for the fold instead.
    tables = (
        "scores_pending, scores_match, scores_result, scores_windowcutoff, scores_playervalue, scores_player, "
        "scores_friendship, scores_boardoutbox, scores_event, scores_eventfloor"
    )
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
        cur.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
    get_redis().flushdb()
    index_flush()
    mark_index_built()
    TopApi._local.clear()
    local_caches_clear()
    config_cache_clear()


def game_with_boards(
    slug: str, boards: Iterable[tuple[Any, str]], *, windows: list[str] | None = None, **game_fields: Any
):
    """A game whose boards mirror reference-model boards (tests/reference.RefBoard, with a
    rank display each), and a server signing for it."""
    game = GameFactory(slug=slug, **{"reset_timezone": "UTC", **game_fields})
    for b, display in boards:
        extra = {"windows": windows} if windows else {}
        if getattr(b, "min_total", 0):
            extra["min_total"] = b.min_total
        if getattr(b, "subscores", ()):
            extra["subscores"] = [{"name": n, "order": o, "min": lo, "max": hi} for n, o, lo, hi in b.subscores]
        BoardFactory(
            game=game,
            slug=b.slug,
            order=b.order,
            mode=b.mode,
            min_score=b.min_score,
            max_score=b.max_score,
            rank_display=display,
            **extra,
        )
    key, secret = server_key(game)
    return game, SignedClient(key.key_id, secret)


SHARDS = 4  # the cluster topology's boards


@pytest.fixture(params=["one", "cluster"])
def topology(request: pytest.FixtureRequest, settings) -> Iterator[str]:
    """The test runs twice: on one Redis with unsharded boards, as before, and with the
    ranking index on the project-local Redis Cluster (scripts/cluster.py), every board created
    meanwhile spread over SHARDS sorted sets per window."""
    if request.param == "one":
        yield "one"
        return
    url = os.environ.get("TEST_REDIS_CLUSTER_URL", "")
    assert url, "run the tests through scripts/services.py exec --for-tests (it starts the local cluster)"
    settings.REDIS_CLUSTER_URL = url
    index_flush()
    mark_index_built()

    def sharded(sender: type, instance: Board, **kwargs: object) -> None:
        if instance._state.adding and instance.shards == 1:
            instance.shards = SHARDS

    pre_save.connect(sharded, sender=Board, dispatch_uid="tests.sharded_boards")
    try:
        yield "cluster"
    finally:
        pre_save.disconnect(sender=Board, dispatch_uid="tests.sharded_boards")


def set_keys(board_id: int, window: str) -> list[str]:
    """Every sorted set of a board window in the current topology."""
    return keys.shard_keys(board_id, window, Board.objects.get(pk=board_id).shards)


def member_key(board_id: int, window: str, member: int | str) -> str:
    """The sorted set of a board window that holds this player (primary key)."""
    return keys.player_key(board_id, window, Board.objects.get(pk=board_id).shards, int(member))


def set_members(board_id: int, window: str) -> dict[bytes, float]:
    """member -> score over every shard of a board window."""
    out: dict[bytes, float] = {}
    for key in set_keys(board_id, window):
        out.update(index.index().zrange(key, 0, -1, withscores=True))
    return out


@pytest.fixture
def drf_entries(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each request DRF's own machinery handled (APIView.initial: negotiation, authentication,
    permissions, throttles), by method: observed, the behaviour unchanged. The hot endpoints'
    tests assert that none of theirs reach it (docs/architecture.md, "One implementation per hot
    endpoint")."""
    from rest_framework.views import APIView

    seen: list[str] = []
    initial = APIView.initial

    def observed(self: APIView, request: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(request.method)
        return initial(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "initial", observed)
    yield seen
