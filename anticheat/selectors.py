"""Moderation reads."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from scores.models import Game


def games_moderated_by(user: Any) -> QuerySet[Game]:
    """The games `user` moderates: every game for an active superuser, the games granted to an
    active staff user (moderator_grant), none for anyone else. The admin scopes every page by
    it (scores/scoping.py)."""
    if not getattr(user, "is_active", False) or not getattr(user, "is_staff", False):
        return Game.objects.none()
    if user.is_superuser:
        return Game.objects.all()
    return Game.objects.filter(moderators__user_id=user.pk)
