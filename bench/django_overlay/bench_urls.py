"""The project's URLs (and error handlers) plus two anchors served by the same server, settings
and middleware as the API:

- `GET /bench/bare`: the cheapest Django JSON view (the framework's ceiling);
- `GET /bench/naive-rank?board=<id>&player=<pk>`: a player's rank as a user without a sorted
  set would compute it, `1 + SELECT count(*) ... WHERE score > mine`, on the same
  scores_playervalue rows and their (board, window, -encoded, player) index."""

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import path

from leaderboard_project import urls as project_urls
from leaderboard_project.urls import *  # noqa: F403  (handler404, handler500: whatever the project defines)


def bare(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


def naive_rank(request: HttpRequest) -> JsonResponse:
    board, player = int(request.GET["board"]), int(request.GET["player"])
    with connection.cursor() as cur:
        cur.execute(
            'SELECT encoded FROM scores_playervalue WHERE board_id = %s AND "window" = %s AND player_id = %s',
            [board, "all", player],
        )
        row = cur.fetchone()
        if row is None:
            return JsonResponse({"error": {"code": "not_found", "message": "no such player"}}, status=404)
        cur.execute(
            'SELECT count(*) FROM scores_playervalue WHERE board_id = %s AND "window" = %s AND encoded > %s',
            [board, "all", row[0]],
        )
        above = cur.fetchone()[0]
    return JsonResponse({"player": player, "rank": above + 1})


urlpatterns = [
    path("bench/bare", bare, name="bench-bare"),
    path("bench/naive-rank", naive_rank, name="bench-naive-rank"),
    *project_urls.urlpatterns,
]
