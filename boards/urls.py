from django.urls import path

from boards import api

urlpatterns = [
    path("games/<str:game>/boards/<str:board>/top", api.TopApi.as_view(), name="boards-top"),
    path(
        "games/<str:game>/boards/<str:board>/players/<str:player>",
        api.PlayerStandingApi.as_view(),
        name="boards-player",
    ),
    path(
        "games/<str:game>/boards/<str:board>/players/<str:player>/friends",
        api.FriendsBoardApi.as_view(),
        name="boards-friends",
    ),
    path("games/<str:game>/boards/<str:board>/histogram", api.HistogramApi.as_view(), name="boards-histogram"),
]
