"""Who moderates which game, for superusers: grant (add) and revoke (delete) go through the
same services as `manage.py moderator_grant` / `moderator_revoke` (docs/moderation.md,
"Moderators per game"). Nobody else sees this page, whatever their permissions."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from anticheat.models import GameModerator
from anticheat.services import moderator_grant, moderator_revoke
from scores.scoping import GameScopedAdmin


@admin.register(GameModerator)
class GameModeratorAdmin(GameScopedAdmin):
    list_display = ("user", "game", "granted_at")
    list_filter = ("game",)
    search_fields = ("user__username", "game__slug")
    list_select_related = ("user", "game")
    autocomplete_fields = ("user", "game")
    fields = ("user", "game")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a grant is added or revoked, never edited

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def save_model(self, request: HttpRequest, obj: GameModerator, form: Any, change: bool) -> None:
        # the service also makes the user staff and a member of the moderators group
        (grant,) = moderator_grant(username=obj.user.get_username(), games=[obj.game.slug])
        obj.pk = grant.pk

    def delete_model(self, request: HttpRequest, obj: GameModerator) -> None:
        moderator_revoke(username=obj.user.get_username(), games=[obj.game.slug])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[GameModerator]) -> None:
        for grant in queryset.select_related("user", "game"):
            moderator_revoke(username=grant.user.get_username(), games=[grant.game.slug])
