from django.urls import path

from boards import api

# under api/v1/games/<game>/boards/<board>/ (leaderboard_project/urls.py)
urlpatterns = [
    path("top", api.TopApi.as_view(), name="boards-top"),
    path("players/<str:player>", api.PlayerStandingApi.as_view(), name="boards-player"),
    path("players/<str:player>/friends", api.FriendsBoardApi.as_view(), name="boards-friends"),
    path("histogram", api.HistogramApi.as_view(), name="boards-histogram"),
]
