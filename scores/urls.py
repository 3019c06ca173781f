from django.urls import path

from scores.api import events, games, matches, players

urlpatterns = [
    path("games", games.GamesApi.as_view(), name="games-list"),
    path("games/<str:game>", games.GameApi.as_view(), name="games-describe"),
    path("games/<str:game>/matches", matches.MatchSubmitApi.as_view(), name="matches-submit"),
    path("games/<str:game>/matches/batch", matches.MatchBatchApi.as_view(), name="matches-batch"),
    path("games/<str:game>/events", events.EventsApi.as_view(), name="events-list"),
    path("games/<str:game>/players/<str:player>/token", players.PlayerTokenApi.as_view(), name="players-token"),
    path("games/<str:game>/players/<str:player>/friends", players.FriendsApi.as_view(), name="players-friends"),
    path(
        "games/<str:game>/players/<str:player>/login-link",
        players.PlayerLoginLinkApi.as_view(),
        name="players-login-link",
    ),
    path(
        "games/<str:game>/players/<str:player>/tokens/revoke",
        players.PlayerTokensRevokeApi.as_view(),
        name="players-tokens-revoke",
    ),
]
