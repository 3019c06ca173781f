"""Who the demo's players are and how they play: display names, stable per-player traits, and
the results of one match. Pure Python, shared by the bulk load (demo/load.py) and the live
traffic (demo/traffic.py), so both tell the same story about a player."""

from __future__ import annotations

import hashlib
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings

from scores.accounts import DEMO_PASSWORD, LoginHint
from scores.selectors import cached_game

DEMO_SLUG = "demo"
DEMO_CONFIG = Path(settings.BASE_DIR) / "games" / "demo.toml"
KEY_NAME = "demo-traffic"

# --- names -------------------------------------------------------------------------------

_SYLLABLES = (
    "ka", "ri", "to", "mi", "an", "el", "zu", "ra", "no", "vi", "sa", "lo", "ne", "ko", "ta", "ly",
    "mar", "dan", "vel", "tor", "kin", "shi", "bel", "dra", "gor", "fen", "ix", "or", "ul", "yo",
    "ste", "qua", "zan", "mor", "len", "tha", "rin", "bo", "ju", "fa",
)  # fmt: skip
_TAGS = ("x", "pro", "gg", "tv", "ttv", "zz", "jr", "ace", "fox", "owl", "wolf", "byte")
_CHARACTERS = ("Nyx", "Brakk", "Solene", "Ivo", "Mara", "Tesk", "Oru", "Vela")
_ROUTES = ("any%", "any%", "any%", "glitchless", "100%")


def display_name(rng: random.Random) -> str:
    """A pronounceable gamer name from plain random syllables: "Korimar", "vel_tor42"..."""
    word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
    style = rng.random()
    if style < 0.45:
        return word.capitalize()
    if style < 0.65:
        return f"{word.capitalize()}{rng.randint(1, 999)}"
    if style < 0.8:
        return f"{word}_{rng.choice(_TAGS)}"
    if style < 0.92:
        other = "".join(rng.choice(_SYLLABLES) for _ in range(2))
        return f"{word.capitalize()} {other.capitalize()}"
    return f"x{word.capitalize()}x"


def player_external_id(n: int) -> str:
    return f"player-{n:06d}"


# The README's demo login: it has scores on every board (today too) and friends right around it
# on each board, and the live traffic has those friends pass it (demo/traffic.py).
DEMO_LOGIN = player_external_id(1)


# --- how a player plays ------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A player's stable traits, derived from the player id alone (load and traffic agree)."""

    rating: float  # around 1500
    speedrun_ms: float  # median ~7 min, log-normal
    kills: float  # mean kills per match
    character: str


_NORMAL = statistics.NormalDist()


@lru_cache(maxsize=200_000)
def profile(external_id: str) -> Profile:
    digest = hashlib.blake2b(external_id.encode(), digest_size=16).digest()
    u = [(int.from_bytes(digest[i : i + 4], "big") + 0.5) / 2**32 for i in range(0, 16, 4)]
    z = [_NORMAL.inv_cdf(x) for x in u[:3]]
    return Profile(
        rating=1500 + 230 * z[0],
        speedrun_ms=420_000 * 2.718281828459045 ** (0.33 * z[1]),
        kills=max(0.5, 6.0 * 2.718281828459045 ** (0.45 * z[2])),
        character=_CHARACTERS[int(u[3] * len(_CHARACTERS))],
    )


def _clamp(value: float, low: int, high: int) -> int:
    return min(max(round(value), low), high)


def match_results(rng: random.Random, players: Sequence[str], board: str | None = None) -> list[dict[str, Any]]:
    """The results of one match among `players` (2-10 distinct ids): a ranked fight (a rating
    for everyone), a deathmatch (kills for everyone) or a race (a time for each finisher, at
    least two); `board` picks the kind."""
    kind = {"rating": 0.0, "kills": 0.5, "speedrun": 0.9}[board] if board else rng.random()
    if kind < 0.4:
        return [
            {
                "player": p,
                "board": "rating",
                "score": _clamp(rng.gauss(profile(p).rating, 40), 0, 10_000_000),
                "metadata": {"character": profile(p).character},
            }
            for p in players
        ]
    if kind < 0.75:
        return [
            {
                "player": p,
                "board": "kills",
                "score": _clamp(rng.gauss(profile(p).kills, profile(p).kills ** 0.5), 0, 30),
            }
            for p in players
        ]
    route = rng.choice(_ROUTES)
    finishers = [p for p in players if rng.random() < 0.85]
    if len(finishers) < 2:
        finishers = list(players[:2])
    return [
        {
            "player": p,
            "board": "speedrun",
            "score": _clamp(profile(p).speedrun_ms * rng.lognormvariate(0, 0.08), 1000, 3_600_000),
            "metadata": {"route": route},
        }
        for p in finishers
    ]


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def demo_match(
    rng: random.Random, players: list[str], now: datetime, *, new_player_chance: float = 0.03
) -> dict[str, Any]:
    """One live match body (docs/api.md §4) among 2-10 random `players`, ended now.

    Now and then one participant is a brand-new player (with a display name); it is appended
    to `players` so later matches can pick it again."""
    size = min(rng.randint(2, 10), len(players))
    chosen = rng.sample(players, size) if size >= 2 else list(players)
    names: dict[str, str] = {}
    if rng.random() < new_player_chance or len(chosen) < 2:
        newcomer = f"rookie-{rng.getrandbits(40):010x}"
        names[newcomer] = display_name(rng)
        players.append(newcomer)
        chosen = [*chosen[: max(1, size - 1)], newcomer]
    results = match_results(rng, chosen)
    for r in results:
        if r["player"] in names:
            r["display_name"] = names[r["player"]]
    return {"match_id": f"live-{rng.getrandbits(64):016x}", "ended_at": rfc3339(now), "results": results}


def demo_login_hint() -> LoginHint | None:
    """The login page's note on the demo logins, while the demo game exists."""
    if cached_game(DEMO_SLUG)[0] is None:
        return None
    return LoginHint(
        anchor="demo-signin",
        title="Demo players",
        detail="Every player of the demo game has an account: the username is the player id "
        f"({player_external_id(1)} up to the number of demo players) and the password is {DEMO_PASSWORD}. "
        f"{DEMO_LOGIN} has scores on every board and friends right around it who pass it now and then.",
        username=DEMO_LOGIN,
        password=DEMO_PASSWORD,
    )
