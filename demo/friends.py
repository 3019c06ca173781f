"""The demo players' friend lists: mutual, FRIENDS_MIN to FRIENDS_MAX each, and for the demo
login the players right around it on every board, so its friends' board is full and the live
traffic (demo/traffic.py) can have them pass it."""

from __future__ import annotations

import random

from django.db import transaction

from boards.selectors import player_standing
from demo.names import DEMO_LOGIN, DEMO_SLUG
from scores import bulk
from scores.models import Friendship, Game, Player
from scores.selectors import GameConfig, game_config, player_pk

FRIENDS_MIN, FRIENDS_MAX = 5, 50
LOGIN_NEIGHBOURS = 4  # the demo login's friends: this many just above and below it on every board


def _friend_pairs(rng: random.Random, n: int, fixed: set[int]) -> list[tuple[int, int]]:
    """Mutual friendships among players 0..n-1 (indices): everyone gets FRIENDS_MIN to
    FRIENDS_MAX friends (fewer on a tiny game); player 0 is friends with `fixed` first."""
    friends: list[set[int]] = [set() for _ in range(n)]
    pairs: list[tuple[int, int]] = []

    def add(a: int, b: int) -> None:
        friends[a].add(b)
        friends[b].add(a)
        pairs.append((a, b))

    for j in sorted(fixed - {0}):
        add(0, j)
    cap = min(FRIENDS_MAX, n - 1)
    order = list(range(n))
    rng.shuffle(order)
    for i in order:
        # each draws a few; the draws of others make up the rest (about twice as many on average)
        want = min(rng.randint(FRIENDS_MIN, FRIENDS_MIN + 3), cap)
        tries = 0
        while len(friends[i]) < want and tries < 50 * want:
            tries += 1
            j = rng.randrange(n)
            if j != i and j not in friends[i] and len(friends[j]) < cap:
                add(i, j)
    return pairs


def demo_friends_create(*, config: GameConfig, seed: int = 1) -> int:
    """Friend lists for every demo player (FRIENDS_MIN to FRIENDS_MAX each, mutual), the demo
    login's made of the players right around it on every board (from the sorted sets, which the
    load has just filled). Returns the rows written (two per friendship)."""
    game_id = config.game.id
    pks = list(Player.objects.filter(game_id=game_id).order_by("id").values_list("id", flat=True))
    login = player_pk(game_id, external_id=DEMO_LOGIN)
    if len(pks) < 2 or login is None:
        return 0
    # the login is index 0, the rest in id order
    pks.remove(login)
    pks.insert(0, login)
    index = {pk: i for i, pk in enumerate(pks)}
    near: set[int] = set()
    for board in config.boards.values():
        standing = player_standing(board, window="all", pk=login, around=LOGIN_NEIGHBOURS)
        near.update(index[e.player_id] for e in standing.around if e.player_id in index)
    pairs = _friend_pairs(random.Random(seed), len(pks), near)
    with transaction.atomic():
        bulk.fk_checks_skip()
        return bulk.friendships_copy(pairs=((pks[a], pks[b]) for a, b in pairs))


def demo_friends_heal() -> int:
    """Friend lists for a demo game loaded before the demo had them."""
    game = Game.objects.filter(slug=DEMO_SLUG).first()
    if game is None or Friendship.objects.filter(player__game=game).exists():
        return 0
    return demo_friends_create(config=game_config(game))
