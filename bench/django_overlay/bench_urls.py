"""The project's URLs (and error handlers) plus `GET /bench/bare`: the cheapest Django JSON view,
served by the same server, settings and middleware as the API, to anchor the read figures."""

from django.http import HttpRequest, JsonResponse
from django.urls import path

from leaderboard_project import urls as project_urls
from leaderboard_project.urls import *  # noqa: F403  (handler404, handler500: whatever the project defines)


def bare(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


urlpatterns = [path("bench/bare", bare, name="bench-bare"), *project_urls.urlpatterns]
