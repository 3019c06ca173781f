from django.urls import path

from competitions import league_api

# under api/v1/games/<game>/boards/<board>/ (leaderboard_project/urls.py)
urlpatterns = [
    path("players/<str:player>/league", league_api.LeagueApi.as_view(), name="boards-player-league"),
]
