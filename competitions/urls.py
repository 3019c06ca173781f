from django.urls import path

from competitions import api

# under api/v1/ (leaderboard_project/urls.py)
urlpatterns = [
    path("games/<str:game>/tournaments", api.TournamentListApi.as_view(), name="tournaments-list"),
    path(
        "games/<str:game>/tournaments/<str:board>/players/<str:player>/join",
        api.TournamentJoinApi.as_view(),
        name="tournaments-join",
    ),
]
