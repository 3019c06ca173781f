"""Sign-in pages: the login form (with whatever hints installed apps registered, e.g. the
demo's logins) and a game's one-time login links (scores/accounts.py). docs/players.md."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import views as auth_views
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from leaderboard_project.security import ThrottledAuthenticationForm
from scores import accounts
from scores.models import Player
from scores.selectors import cached_game


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    authentication_form = ThrottledAuthenticationForm  # says so when guessing got it locked out
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["login_hints"] = accounts.login_hints()
        form = context.get("form")
        context["throttled"] = form is not None and form.has_error(NON_FIELD_ERRORS, "throttled")
        return context


@require_http_methods(["GET", "POST"])
def login_link(request: HttpRequest, token: str) -> HttpResponse:
    """A game's one-time login link: GET shows what it will do, POST (with CSRF) redeems it.
    Never for a staff or superuser account (scores/accounts.py): refused with 403."""
    try:
        target = accounts.login_link_read(token)
    except accounts.LoginLinkError as exc:
        return render(request, "pages/login_link.html", {"error": exc}, status=400)
    player = Player.objects.select_related("game").filter(pk=target.player_pk).first()
    if request.method == "GET":
        context = {
            "player": player,
            "expires_at": target.expires_at,
            "staff_signed_in": request.user.is_authenticated and accounts.is_staff_account(request.user),
            "staff_message": accounts.STAFF_SIGNED_IN,
        }
        return render(request, "pages/login_link.html", context)
    try:
        user, player = accounts.login_link_redeem(token=token, user=request.user)
    except accounts.LoginLinkError as exc:
        status = {"used": 409, "conflict": 409, "staff": 403}.get(exc.code, 400)
        return render(request, "pages/login_link.html", {"error": exc, "player": player}, status=status)
    if not request.user.is_authenticated or request.user.pk != user.pk:
        auth.login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
    first_board = next(iter(cached_game(player.game.slug)[1].values()), None)
    if first_board is None:
        return redirect(reverse("pages-game", args=[player.game.slug]))
    return redirect(reverse("pages-board", args=[player.game.slug, first_board.slug]))
