"""Server keys: scores/admin.py's page, with the revoke action (audited as a moderation action)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from anticheat.services import Actor, server_key_revoke
from scores.admin import ServerKeyAdmin
from scores.models import ServerKey

admin.site.unregister(ServerKey)


@admin.register(ServerKey)
class ServerKeyModerationAdmin(ServerKeyAdmin):
    actions = ["revoke"]

    # revoking needs the change permission: a moderator may see keys but not revoke them
    # unless granted scores.change_serverkey separately
    @admin.action(description="Revoke selected keys (refused from their next request)", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ServerKey]) -> None:
        for key in queryset:
            server_key_revoke(key=key, actor=Actor.of_user(request.user))
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)
