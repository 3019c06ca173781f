"""Every Redis key the project uses is built here: the ranking index's, the live updates',
the anti-cheat's, the heartbeats'.

lb:{<board_id>}:{window}        sorted set of an unsharded board: member = player primary key,
                                score = encoded value
lb:{<board_id>.<s>}:{window}    shard s of a board kept in `shards` sorted sets per window
                                (a player's shard: shard_of). The hash tag {...} puts every window
                                of one board shard in one Redis Cluster slot: a player's writes to a
                                board are one slot, rolling unions and rebuild renames stay in it
lbb:{<tag>}:{token}:{window}    a board window (shard) being rebuilt, renamed over the live key
lbc:{<tag>}:{window}            integer: how many member writes a board window (shard) has taken;
                                an estimated rank's error bound counts the changes since its
                                histogram (boards/histogram.py, docs/reads.md)
lb:outbox:applied               ids of outbox rows the post-commit path has mirrored
lb:meta:built                   set once the index has been built from Postgres; its absence
                                after a Redis restart (Redis keeps nothing on disk) triggers a rebuild
pv:{board_id}:{window}:{player_id}:{encoded}
                                string (270 s expiry): a player's profile as a board window shows it,
                                compact JSON [external id, display name, metadata, encoded]
                                (boards/profiles.py); outside lb:, like Django's cache keys: a cache
                                anyone may empty
fl:{player_id}                  string (60 s expiry): a player's friends' primary keys joined by ","
                                (boards/profiles.py), a cache like pv:, which friends.lua reads in
                                the board read's own round trip
ptg:{player_id}                 integer: the player's bearer-token generation (scores.PlayerTokenGeneration;
                                docs/api.md §3.2), a token older than it refused. Expires with the
                                longest-lived token; a cache of Postgres anyone may empty (missing:
                                the reader asks Postgres), which page.lua and friends.lua read in
                                the thin path's own round trip
lb:once:{key_id}:{v1}           set (until its signature's 300 s are over) once a signed request that
                                mints credentials was served (scores/auth.py signature_use_once,
                                through rediskit/credentials.py):
                                not a cache, emptying it would let a replay through
lb:hist:{board_id}:{window}     hash: the score histogram of a board window (boards/histogram.py);
                                outside lb:{board_id}:* so rebuilds never touch it
lb:throttle:{scope}:{ident}:{n} integer: requests of one client in the n-th fixed window of a rate
                                limit (boards/throttles.py); expires with the window
lb:live:watched                 sorted set: "{board_id}|{window}" -> until when (ms) some websocket
                                process watches it (boards/live.py, refreshed by the processes)
lb:live:due                     sorted set: "{board_id}|{window}" -> earliest next live publish (ms)
lb:live:dirty                   set: watched board windows changed since their last publish
lb:live:top:{board_id}:{window} digest of the last top-10 message published for a board window
lb:live:topgate:{board_id}:{window}
                                set (expiring after the publish interval) while a board window's
                                top-10 message may not go out again
lb:live:top_pending             sorted set: "{board_id}|{window}" -> when (ms) its held-back top-10
                                message is due; whoever removes the entry publishes it
lb:rate:{g<game_id>}:<player>   integer: a player's new matches in the anti-cheat rate rule's window
                                (anticheat/rules.py); one hash tag per game, so one script call
                                counts a whole submission
lb:anticheat:scheduled          set (30 s expiry) while a Celery drain of the checks' backlog
                                (anticheat.CheckBacklog, in Postgres) is queued
lb:heal:stats                   hash: the index sampler's totals (sampled, drift, last_at), for /metrics
lb:heal:primaries               the cluster's primary node ids at the last check (failover replay)
lb:heartbeat:workers            hash: Celery worker hostname -> its latest heartbeat (monitoring/heartbeats.py)
lb:heartbeat:beat               Celery beat's latest heartbeat
"""

import re
import zlib

BOARD_PREFIX = "lb:"

# Keys that take no parameter (what each holds: the table above)
BUILT_MARKER = "lb:meta:built"
OUTBOX_APPLIED = "lb:outbox:applied"
ANTICHEAT_SCHEDULED = "lb:anticheat:scheduled"
LIVE_WATCHED = "lb:live:watched"
LIVE_DUE = "lb:live:due"
LIVE_DIRTY = "lb:live:dirty"
LIVE_TOP_PENDING = "lb:live:top_pending"
HEARTBEAT_WORKERS = "lb:heartbeat:workers"
HEARTBEAT_BEAT = "lb:heartbeat:beat"
HEAL_STATS = "lb:heal:stats"
HEAL_PRIMARIES = "lb:heal:primaries"
_BOARD_KEY = re.compile(r"^lb:\{(\d+)(?:\.(\d+))?\}:(.+)$")


def _tag(board_id: int, shard: int | None) -> str:
    return f"{{{board_id}}}" if shard is None else f"{{{board_id}.{shard}}}"


def board_key(board_id: int, window: str, shard: int | None = None) -> str:
    """The sorted set of a board window (shard None: an unsharded board's only set)."""
    return f"lb:{_tag(board_id, shard)}:{window}"


def shard_of(player_id: int, shards: int) -> int:
    """A player's shard: stable across processes and restarts (CRC-32 of the primary key)."""
    return shard_of_member(str(player_id), shards)


def shard_of_member(member: str, shards: int) -> int:
    """shard_of() for the player's member in the sorted sets (the primary key as text)."""
    return zlib.crc32(member.encode()) % shards if shards > 1 else 0


def shard_keys(board_id: int, window: str, shards: int) -> list[str]:
    """Every sorted set of a board window, shard 0 first."""
    if shards <= 1:
        return [board_key(board_id, window)]
    return [board_key(board_id, window, s) for s in range(shards)]


def player_key(board_id: int, window: str, shards: int, player_id: int) -> str:
    """The sorted set of a board window that holds this player."""
    if shards <= 1:
        return board_key(board_id, window)
    return board_key(board_id, window, shard_of(player_id, shards))


def board_patterns(board_id: int) -> list[str]:
    """SCAN patterns matching every sorted set of a board, sharded or not."""
    return [f"lb:{{{board_id}}}:*", f"lb:{{{board_id}.*"]


def parse_board_key(key: str) -> tuple[int, int | None, str] | None:
    """(board_id, shard or None, window) of a sorted set's key; None for any other key."""
    m = _BOARD_KEY.match(key)
    if m is None:
        return None
    return int(m.group(1)), None if m.group(2) is None else int(m.group(2)), m.group(3)


def window_of(key: str) -> str:
    return key.split("}:", 1)[1]


def build_key(token: str, board_id: int, window: str, shard: int | None = None) -> str:
    return f"lbb:{_tag(board_id, shard)}:{token}:{window}"


def changes_key(live_key: str) -> str:
    """The write counter kept beside a sorted set (same slot)."""
    return "lbc:" + live_key[len("lb:") :]


def profile_key_prefix(board_id: int, window: str) -> str:
    """What every profile key of a board window starts with (friends.lua appends the rest)."""
    return f"pv:{board_id}:{window}:"


def profile_key(board_id: int, window: str, player_id: int, encoded: int) -> str:
    return f"{profile_key_prefix(board_id, window)}{player_id}:{encoded}"


def friend_list_key(player_id: int) -> str:
    return f"fl:{player_id}"


def histogram_key(board_id: int, window: str) -> str:
    return f"lb:hist:{board_id}:{window}"


def match_rate_key(game_id: int, player: str) -> str:
    return f"lb:rate:{{g{game_id}}}:{player}"


def live_last_top(board_id: int, window: str) -> str:
    return f"lb:live:top:{board_id}:{window}"


def live_top_gate(board_id: int, window: str) -> str:
    return f"lb:live:topgate:{board_id}:{window}"


def throttle_key(scope: str, ident: str, window: int) -> str:
    return f"lb:throttle:{scope}:{ident}:{window}"


def player_tokens_key(player_id: int) -> str:
    return f"ptg:{player_id}"


def signature_once_key(key_id: str, v1: str) -> str:
    return f"lb:once:{key_id}:{v1.lower()}"
