from django.urls import path

from seasons import api

# under api/v1/games/<game>/boards/<board>/ (leaderboard_project/urls.py)
urlpatterns = [
    path("export", api.WindowExportApi.as_view(), name="boards-export"),
    path("standings/<str:window>", api.StandingsApi.as_view(), name="boards-standings"),
]
