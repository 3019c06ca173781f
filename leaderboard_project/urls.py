from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseServerError
from django.shortcuts import render
from django.template import loader
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard_project.errors import error_response, read_only
from leaderboard_project.security import ThrottledAdminAuthenticationForm
from monitoring.health import healthz
from monitoring.metrics import metrics_view


class SchemaApi(SpectacularAPIView):
    """GET /api/schema/: the schema in YAML unless JSON is asked for; a refusal (405, 406) is the
    JSON error body of docs/api.md §14 like every refusal under /api/, not that body in YAML."""

    def finalize_response(self, request: Request, response: Response, *args: object, **kwargs: object) -> Response:
        if response.status_code >= 400:
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


# the lock-out after repeated failures is said as such (leaderboard_project/security.py)
admin.site.login_form = ThrottledAdminAuthenticationForm

BOARD = "api/v1/games/<str:game>/boards/<str:board>/"  # the reads of one board (docs/api.md §5, §6, §10)

# Django tries the patterns in order, and each miss costs (a rank read resolved in ~37 µs behind
# the others, ~18 µs first): the hot reads come first, then submissions. No two patterns here
# match the same path, so the order decides nothing else.
urlpatterns = [
    path(BOARD, include("boards.urls")),
    path("api/v1/", include("scores.urls")),
    path("admin/", admin.site.urls),
    path("healthz", read_only(healthz), name="healthz"),
    path("metrics", read_only(metrics_view), name="metrics"),
    path("api/v1/", include("anticheat.urls")),
    path("api/v1/", include("competitions.urls")),
    path(BOARD, include("seasons.urls")),
    path(BOARD, include("competitions.board_urls")),
    path("api/schema/", SchemaApi.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("", include("pages.urls")),  # the player web pages (HTML)
]


# Machine routes answer the JSON error body of docs/api.md §14; everything else is a page for people,
# answered in the site's style (templates/404.html, templates/500.html).
_MACHINE_PREFIXES = ("/api/", "/healthz", "/metrics", "/ws/", "/admin/jsi18n")


def _machine(request: HttpRequest) -> bool:
    return request.path.startswith(_MACHINE_PREFIXES)


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _machine(request):
        return error_response("not_found", "not found", 404)
    return render(request, "404.html", status=404)


def handler500(request: HttpRequest) -> HttpResponse:
    if _machine(request):
        return error_response("internal_error", "internal server error", 500)
    # no request context: the session or the database may be what failed
    return HttpResponseServerError(loader.get_template("500.html").render())
