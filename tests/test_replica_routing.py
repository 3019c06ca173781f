"""Which reads may go to the read replica (leaderboard_project/replicas.py; the real replica's
behaviour is tests/test_replicas.py): the listed lagging-tolerant pages and APIs, the admin's list
pages, and nothing else; sessions and users never."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import RequestFactory
from django.urls import resolve

from leaderboard_project import replicas
from leaderboard_project.replicas import _lagging_view
from scores.models import Player

LAGGING = [
    "/games/chess/players/ana/",
    "/games/chess/boards/rating/archive/",
    "/api/v1/games/chess/boards/rating/standings/daily:2026-11-28",
    "/api/v1/games/chess/boards/rating/export",
    "/admin/scores/match/",
    "/admin/seasons/windowfreeze/",
    "/admin/seasons/windowfreeze/export/",
]
FRESH = [
    "/games/chess/boards/rating/",  # the board page: ranks from Redis, the viewer's own card
    "/api/v1/games/chess/boards/rating/top",
    "/api/v1/games/chess/boards/rating/players/ana",
    "/api/v1/games/chess/matches",
    "/admin/scores/match/1/change/",
    "/healthz",
]


def _is_lagging(method: str, path: str) -> bool:
    request = RequestFactory().generic(method, path)
    request.resolver_match = match = resolve(path)
    return _lagging_view(request, match.func)


@pytest.mark.parametrize("path", LAGGING)
def test_the_listed_reads_may_lag(path: str) -> None:
    assert _is_lagging("GET", path)
    assert not _is_lagging("POST", path)  # a write on the same route never


@pytest.mark.parametrize("path", FRESH)
def test_every_other_read_stays_on_the_primary(path: str) -> None:
    assert not _is_lagging("GET", path)


def test_sessions_and_users_are_read_from_the_primary_and_a_write_pins_the_request_there(monkeypatch) -> None:
    # a replica configured and within its bound, as far as the router can tell (no real one here)
    monkeypatch.setattr(replicas, "configured", lambda: True)
    monkeypatch.setattr(replicas, "_usable", lambda scope: True)
    router = replicas.ReplicaRouter()
    token = replicas._scope.set(replicas._Scope(lagging_ok=True))
    try:
        assert router.db_for_read(Player) == "replica"
        for model in (Session, get_user_model()):
            assert router.db_for_read(model) == "default"
        router.db_for_write(Player)
        assert router.db_for_read(Player) == "default"  # this request wrote: its own reads stay
    finally:
        replicas._scope.reset(token)
