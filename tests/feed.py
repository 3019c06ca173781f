"""Reading the events feed back as a consumer would (docs/api.md §13.1), for the tests that hold
it to the reference model: every event once, in order, and the values it replays to."""

from __future__ import annotations

from collections import Counter
from typing import Any

from scores.events import MATCH_ACCEPTED, MATCH_HELD, VALUE_CHANGED, Cursor, cursor_parse, events_page

Key = tuple[str, str, str]  # board, window, player


def feed_read(game_id: int, *, page: int) -> list[dict[str, Any]]:
    """Every event of the game, in pages of `page`, each page after the last `next`; checks
    that ids only grow and that `next` is the last id given."""
    out: list[dict[str, Any]] = []
    after: Cursor | None = None
    while True:
        got = events_page(game_id=game_id, after=after, limit=page)
        if not got.events:
            return out
        assert str(got.next) == got.events[-1]["id"]
        for e in got.events:
            assert after is None or cursor_parse(e["id"]) > after, (e, after)
            after = cursor_parse(e["id"])
        out += got.events


def feed_replay(events: list[dict[str, Any]]) -> dict[Key, int]:
    """The values value.changed replays to. Each change must start from the value the one
    before left (None: no value), so the order is one the values actually went through."""
    values: dict[Key, int] = {}
    for e in events:
        if e["type"] != VALUE_CHANGED:
            continue
        d = e["data"]
        key = (d["board"], d["window"], d["player"])
        assert values.get(key) == d["before"], (e, values.get(key))
        assert d["before"] != d["after"], e
        if d["after"] is None:
            values.pop(key, None)
        else:
            values[key] = d["after"]
    return values


def feed_arrivals(events: list[dict[str, Any]]) -> Counter[str]:
    """How often each match was told of as it arrived (accepted or held): at most once."""
    return Counter(e["data"]["match_id"] for e in events if e["type"] in (MATCH_ACCEPTED, MATCH_HELD))
