from django.urls import path

from seasons import api

urlpatterns = [
    path("games/<str:game>/boards/<str:board>/export", api.WindowExportApi.as_view(), name="boards-export"),
    path(
        "games/<str:game>/boards/<str:board>/standings/<str:window>",
        api.StandingsApi.as_view(),
        name="boards-standings",
    ),
]
