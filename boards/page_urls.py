"""Routes of the player web pages (boards/views.py) and sign-in."""

from django.contrib.auth import views as auth_views
from django.urls import path

from boards import views

urlpatterns = [
    path("", views.index, name="pages-index"),
    path("games/<str:game>/", views.game_page, name="pages-game"),
    path("games/<str:game>/boards/<str:board>/", views.board_page, name="pages-board"),
    path("accounts/login/", views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("login-link/<str:token>/", views.login_link, name="login-link"),
]
