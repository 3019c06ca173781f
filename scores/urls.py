from django.urls import path

from scores import api

urlpatterns = [
    path("games", api.GamesApi.as_view(), name="games-list"),
    path("games/<str:game>", api.GameApi.as_view(), name="games-describe"),
    path("games/<str:game>/matches", api.MatchSubmitApi.as_view(), name="matches-submit"),
    path("games/<str:game>/matches/batch", api.MatchBatchApi.as_view(), name="matches-batch"),
    path("games/<str:game>/players/<str:player>/token", api.PlayerTokenApi.as_view(), name="players-token"),
    path("games/<str:game>/players/<str:player>/friends", api.FriendsApi.as_view(), name="players-friends"),
    path(
        "games/<str:game>/players/<str:player>/login-link", api.PlayerLoginLinkApi.as_view(), name="players-login-link"
    ),
]
