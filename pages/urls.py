"""Routes of the player web pages (pages/views.py) and sign-in (pages/signin.py)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from pages import signin, views

urlpatterns = [
    path("", views.index, name="pages-index"),
    path("games/<str:game>/", views.game_page, name="pages-game"),
    path("games/<str:game>/boards/<str:board>/", views.board_page, name="pages-board"),
    path("games/<str:game>/boards/<str:board>/join/", views.tournament_join, name="pages-tournament-join"),
    path("games/<str:game>/boards/<str:board>/archive/", views.archive_page, name="pages-archive"),
    path("games/<str:game>/players/<str:player>/", views.player_page, name="pages-player"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/login/", signin.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("login-link/<str:token>/", signin.login_link, name="login-link"),
]
