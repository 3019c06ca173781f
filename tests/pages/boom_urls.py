"""The project's URLs plus two routes that fail, to see what a 500 looks like (tests only)."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from leaderboard_project.urls import handler404, handler500
from leaderboard_project.urls import urlpatterns as project_urls

__all__ = ["handler404", "handler500", "urlpatterns"]


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in a page")


urlpatterns = [path("boom/", boom), path("api/v1/boom", boom), *project_urls]
