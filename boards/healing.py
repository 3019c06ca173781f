"""Self-healing of the ranking index (docs/reliability.md, "The index heals itself").

- index_sample_check (Celery beat, every minute): samples members of every live board window
  (random players from Postgres, random members from each shard), compares their values in
  the sorted sets with Postgres, repairs what differs through the moderation path's absolute
  rewrite (services.values_rewrite: the rows are read FOR SHARE, so a concurrent ingest's
  ZADD GT lands after the repair and is never undone) and counts the drift: in the log
  (WARNING when any) and in /metrics (leaderboard_index_sampled, leaderboard_index_drift).
- failover_replay (every sync_pending run, on a cluster): a primary replaced by its replica is
  a change in the set of primary node ids. Replication is asynchronous, so writes the old
  primary acknowledged just before it died may be missing on the new one: every value written
  since shortly before the last check that saw the old topology is replayed from Postgres
  (ZADD GT, absolute values: replaying more than was lost is harmless). Writes refused during
  the failover left their outbox rows unapplied; the outbox drain replays those.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from redis.cluster import RedisCluster

from boards import histogram, index, services
from rediskit import keys
from rediskit.client import get_redis
from scores.models import Board
from scores.selectors import values_updated_since, window_random_players, window_sample
from scores.windows import ROLLING_WINDOWS

log = logging.getLogger(__name__)

SAMPLE = 100  # players per board window from each side (Postgres, Redis)
FAILOVER_MARGIN = timedelta(seconds=60)  # before the last check that saw the old primaries


@dataclass
class SampleReport:
    windows: int = 0
    sampled: int = 0
    drift: int = 0  # values the sorted sets had wrong or missing
    repaired: int = 0


def index_sample_check(*, per_window: int = SAMPLE, now: datetime | None = None) -> SampleReport:
    now = now or timezone.now()
    report = SampleReport()
    for board in histogram.all_boards():
        for window in histogram.refreshed_windows(board, now):
            if window in ROLLING_WINDOWS:
                continue  # no value rows: rebuilt whole every minute (boards/rolling.py)
            report.windows += 1
            _window_check(board, window, per_window, report)
    stats = get_redis().pipeline(transaction=False)
    stats.hincrby(keys.HEAL_STATS, "sampled", report.sampled)
    stats.hincrby(keys.HEAL_STATS, "drift", report.drift)
    stats.hset(keys.HEAL_STATS, "last_at", now.isoformat())
    stats.execute()
    if report.drift:
        log.warning(
            "index sampler: %d of %d sampled members differed from Postgres over %d windows; repaired %d",
            report.drift,
            report.sampled,
            report.windows,
            report.repaired,
        )
    else:
        log.info("index sampler: %d members over %d windows agree with Postgres", report.sampled, report.windows)
    return report


def _window_check(board, window: str, per_window: int, report: SampleReport) -> None:
    set_keys = keys.shard_keys(board.id, window, board.shards)
    per_shard = max(1, per_window // len(set_keys))
    # Redis first, then Postgres: a value Postgres has and Redis not yet (a mirror in flight) is
    # rewritten to what Postgres holds, never the other way round
    redis_side: dict[int, int] = {}
    for reply in index.batch([("zrandmember", k, per_shard, True) for k in set_keys]):
        for i in range(0, len(reply or []), 2):
            redis_side[int(reply[i])] = int(float(reply[i + 1]))
    pg_side = window_random_players(board.id, window=window, count=per_window)
    wanted = sorted(set(pg_side) - set(redis_side))
    if wanted:
        by_key: dict[str, list[int]] = {}
        for pk in wanted:
            by_key.setdefault(keys.player_key(board.id, window, board.shards, pk), []).append(pk)
        replies = index.batch([("zmscore", k, [str(m) for m in ms]) for k, ms in by_key.items()])
        for ms, scores in zip(by_key.values(), replies, strict=True):
            for pk, score in zip(ms, scores, strict=True):
                if score is not None:
                    redis_side[pk] = int(float(score))
    truth = {
        **pg_side,
        **window_sample(board.id, window=window, player_ids=sorted(set(redis_side) - set(pg_side))),
    }
    members = set(redis_side) | set(pg_side)
    differing = sorted(pk for pk in members if redis_side.get(pk) != truth.get(pk))
    report.sampled += len(members)
    report.drift += len(differing)
    if differing:
        report.repaired += services.values_rewrite([(board.id, window, pk) for pk in differing])


def failover_replay() -> int:
    """On a cluster: replay recent values after a primary was replaced. Returns how many."""
    if not index.is_cluster():
        return 0
    r = index.index()
    assert isinstance(r, RedisCluster)
    primaries = sorted(
        node_id
        for node_id, node in _cluster_nodes(r).items()
        if "master" in node["flags"] and "fail" not in node["flags"] and node["slots"]
    )
    plain = get_redis()
    now = time.time()
    raw = plain.get(keys.HEAL_PRIMARIES)
    plain.set(keys.HEAL_PRIMARIES, json.dumps({"primaries": primaries, "at": now}))
    if raw is None:
        return 0
    seen = json.loads(raw)
    if seen["primaries"] == primaries:
        return 0
    since = datetime.fromtimestamp(seen["at"], UTC) - FAILOVER_MARGIN
    rows = values_updated_since(list(Board.objects.values_list("id", flat=True)), since=since)
    services.values_write(rows)
    log.warning(
        "index: cluster primaries changed (%d -> %d nodes, failover): replayed %d values written since %s",
        len(seen["primaries"]),
        len(primaries),
        len(rows),
        since.isoformat(),
    )
    return len(rows)


def _cluster_nodes(r: RedisCluster) -> dict:
    """CLUSTER NODES as a node sees it, by node id."""
    reply = r.cluster_nodes()
    return {node["node_id"]: node for node in reply.values()}
