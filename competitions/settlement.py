"""Settlement (docs/api.md §13, docs/competitions.md): a board's `rewards` tiers and a game's
`[[webhooks]]`, parsed for scores/config.py (registered in CompetitionsConfig.ready()), and
which reward a frozen rank earns."""

from __future__ import annotations

import math
import re
from typing import Any

from competitions.receivers import url_refusal
from scores import events
from scores.config import origin_normalise

EVENTS = ("window.frozen", "window.refrozen", "tournament.ended")  # settlement: a hook without `events` gets these
# what a hook may also subscribe to: the events feed's low-volume types (docs/api.md §13.1)
SUBSCRIBABLE = (*EVENTS, *events.PUSHED)
MAX_WEBHOOKS = 10
MAX_TIERS = 50
_RANKS = re.compile(r"^([1-9][0-9]{0,8})(?:-([1-9][0-9]{0,8}))?$")


def rewards_parse(value: Any) -> dict[str, Any]:
    """`[{ranks = "1", reward = "gold"}, {ranks = "2-10", reward = "silver"}, {top_percent = 1,
    reward = "badge"}]` -> {"tiers": [...]}; raises ValueError(key, message)."""
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ValueError("", 'a list of tables is required: [{ranks = "1", reward = "gold"}, ...]')
    if len(value) > MAX_TIERS:
        raise ValueError("", f"at most {MAX_TIERS} tiers")
    tiers = []
    for i, tier in enumerate(value):
        unknown = set(tier) - {"ranks", "top_percent", "reward"}
        if unknown:
            raise ValueError(f"[{i}].{sorted(unknown)[0]}", "unknown key (expected one of: ranks, reward, top_percent)")
        reward = tier.get("reward")
        if not isinstance(reward, str) or not reward.strip() or len(reward) > 64:
            raise ValueError(f"[{i}].reward", "a non-empty string of at most 64 characters is required")
        if ("ranks" in tier) == ("top_percent" in tier):
            raise ValueError(f"[{i}]", "give exactly one of ranks or top_percent")
        if "ranks" in tier:
            found = _RANKS.match(tier["ranks"]) if isinstance(tier["ranks"], str) else None
            low, high = (int(found.group(1)), int(found.group(2) or found.group(1))) if found else (0, 0)
            if not found or high < low:
                raise ValueError(f"[{i}].ranks", 'a rank ("1") or a range of ranks ("2-10") is required')
            tiers.append({"ranks": [low, high], "reward": reward})
        else:
            pct = tier["top_percent"]
            if isinstance(pct, bool) or not isinstance(pct, int | float) or not 0 < pct <= 100:
                raise ValueError(f"[{i}].top_percent", "a number above 0 and at most 100 is required")
            tiers.append({"top_percent": pct, "reward": reward})
    return {"tiers": tiers}


def reward_for(tiers: list[dict[str, Any]], *, rank: int | None, entries: int) -> str | None:
    """The first tier, in the order listed, that a rank earns among `entries` players."""
    if rank is None:
        return None
    for tier in tiers:
        if "ranks" in tier:
            low, high = tier["ranks"]
            if low <= rank <= high:
                return tier["reward"]
        elif rank <= math.ceil(entries * tier["top_percent"] / 100):
            return tier["reward"]
    return None


def deepest_rewarded(tiers: list[dict[str, Any]], *, entries: int) -> int:
    """The deepest rank any tier rewards among `entries` players."""
    deepest = 0
    for tier in tiers:
        if "ranks" in tier:
            deepest = max(deepest, tier["ranks"][1])
        else:
            deepest = max(deepest, math.ceil(entries * tier["top_percent"] / 100))
    return min(deepest, entries)


def webhooks_parse(value: Any) -> dict[str, Any]:
    """`[[webhooks]]` tables -> {"hooks": [{"url", "events"}]}; raises ValueError(key, message)."""
    if not isinstance(value, list) or not all(isinstance(h, dict) for h in value):
        raise ValueError("", "use [[webhooks]] tables")
    if len(value) > MAX_WEBHOOKS:
        raise ValueError("", f"at most {MAX_WEBHOOKS} webhooks")
    hooks = []
    for i, hook in enumerate(value):
        unknown = set(hook) - {"url", "events"}
        if unknown:
            raise ValueError(f"[{i}].{sorted(unknown)[0]}", "unknown key (expected one of: events, url)")
        url = hook.get("url")
        if not isinstance(url, str) or origin_normalise(_origin_of(url)) is None:
            raise ValueError(f"[{i}].url", "an http or https URL is required")
        refusal = url_refusal(url)  # docs/competitions.md, "Receivers"
        if refusal:
            raise ValueError(f"[{i}].url", f"a receiver on a public address is required: {refusal}")
        kinds = hook.get("events", list(EVENTS))
        if not isinstance(kinds, list) or not kinds:
            raise ValueError(f"[{i}].events", f"a non-empty list drawn from {', '.join(SUBSCRIBABLE)}")
        for kind in kinds:
            if kind in events.FEED_ONLY:
                raise ValueError(f"[{i}].events", f"{kind} is in the events feed only (GET .../events, scope events)")
            if kind not in SUBSCRIBABLE:
                raise ValueError(f"[{i}].events", f"a non-empty list drawn from {', '.join(SUBSCRIBABLE)}")
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"[{i}].events", "lists an event twice")
        hooks.append({"url": url, "events": kinds})
    return {"hooks": hooks}


def _origin_of(url: str) -> str:
    head, sep, rest = url.partition("://")
    return head + sep + rest.split("/", 1)[0].split("?", 1)[0] if sep else url
