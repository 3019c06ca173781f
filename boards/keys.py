"""Every Redis key the ranking engine uses is built here.

lb:{board_id}:{window}          sorted set: member = player primary key, score = encoded value
lb:build:{token}:{board_id}:{window}   a board window being rebuilt, renamed over the live key
lb:outbox:applied               ids of outbox rows the post-commit path has mirrored
lb:meta:built                   set once the index has been built from Postgres; its absence
                                after a Redis restart (Redis keeps nothing on disk) triggers a rebuild
lb:hist:{board_id}:{window}     hash: the score histogram of a board window (boards/histogram.py);
                                outside lb:{board_id}:* so rebuilds never touch it
lb:throttle:{scope}:{ident}:{n} integer: requests of one client in the n-th fixed window of a rate
                                limit (boards/throttles.py); expires with the window
lb:live:watched                 sorted set: "{board_id}|{window}" -> until when (ms) some websocket
                                process watches it (boards/live.py, refreshed by the processes)
lb:live:due                     sorted set: "{board_id}|{window}" -> earliest next live publish (ms)
lb:live:dirty                   set: watched board windows changed since their last publish
lb:live:top:{board_id}:{window} digest of the last top-10 message published for a board window
lb:anticheat:pending            list: ids of accepted matches awaiting the after-the-fact checks
lb:rate:{g<game_id>}:<player>   integer: a player's new matches in the anti-cheat rate rule's window
                                (anticheat/rules.py); one hash tag per game, so one script call
                                counts a whole submission
lb:anticheat:scheduled          set (30 s expiry) while a Celery drain of that list is queued
lb:heartbeat:workers            hash: Celery worker hostname -> its latest heartbeat (monitoring/heartbeats.py)
lb:heartbeat:beat               Celery beat's latest heartbeat
"""

BOARD_PREFIX = "lb:"


def board_key(board_id: int, window: str) -> str:
    return f"lb:{board_id}:{window}"


def board_pattern(board_id: int) -> str:
    return f"lb:{board_id}:*"


def window_of(key: str) -> str:
    return key.split(":", 2)[2]


def board_and_window(key: str) -> tuple[int, str]:
    _, board_id, window = key.split(":", 2)
    return int(board_id), window


def build_key(token: str, board_id: int, window: str) -> str:
    return f"lb:build:{token}:{board_id}:{window}"


def built_marker() -> str:
    return "lb:meta:built"


def outbox_applied() -> str:
    return "lb:outbox:applied"


def histogram_key(board_id: int, window: str) -> str:
    return f"lb:hist:{board_id}:{window}"


def anticheat_pending() -> str:
    return "lb:anticheat:pending"


def match_rate_key(game_id: int, player: str) -> str:
    return f"lb:rate:{{g{game_id}}}:{player}"


def anticheat_scheduled() -> str:
    return "lb:anticheat:scheduled"


def live_watched() -> str:
    return "lb:live:watched"


def live_due() -> str:
    return "lb:live:due"


def live_dirty() -> str:
    return "lb:live:dirty"


def live_last_top(board_id: int, window: str) -> str:
    return f"lb:live:top:{board_id}:{window}"


def live_top_gate(board_id: int, window: str) -> str:
    return f"lb:live:topgate:{board_id}:{window}"


def live_top_pending() -> str:
    return "lb:live:top_pending"


def throttle_key(scope: str, ident: str, window: int) -> str:
    return f"lb:throttle:{scope}:{ident}:{window}"


def heartbeat_workers() -> str:
    return "lb:heartbeat:workers"


def heartbeat_beat() -> str:
    return "lb:heartbeat:beat"
