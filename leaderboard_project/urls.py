from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from leaderboard_project.errors import error_response
from leaderboard_project.health import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include("scores.urls")),
    path("api/v1/", include("boards.urls")),
    path("api/v1/", include("seasons.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("pages.urls")),  # the player web pages (HTML)
]


def handler404(request, exception=None):  # noqa: ANN001, ANN201  (Django's handler signature)
    return error_response("not_found", "not found", 404)


def handler500(request):  # noqa: ANN001, ANN201
    return error_response("internal_error", "internal server error", 500)
