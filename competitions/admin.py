"""Operators see every webhook delivery, its attempts and the receiver's last answer, and can
redeliver (docs/competitions.md). Tournaments' entries, read-only."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from competitions.models import TournamentEntry, WebhookDelivery
from competitions.webhooks import deliveries_redeliver
from scores.admin import ReadOnlyAdminMixin
from scores.scoping import GameScopedAdmin


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdminMixin, GameScopedAdmin):
    list_display = (
        "id",
        "event_type",
        "board",
        "window",
        "version",
        "url",
        "state",
        "attempts",
        "last_status",
        "last_attempt_at",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("state", "event__type")
    search_fields = ("url", "window", "event__id")
    list_select_related = ("event", "event__game", "board")
    readonly_fields = (
        "event",
        "url",
        "board",
        "window",
        "state",
        "attempts",
        "next_attempt_at",
        "give_up_at",
        "last_status",
        "last_response",
        "last_attempt_at",
        "delivered_at",
        "body",
    )
    exclude = ()
    actions = ["redeliver"]
    ordering = ("-id",)

    @admin.display(description="event")
    def event_type(self, obj: WebhookDelivery) -> str:
        return obj.event.type

    @admin.display(description="version")
    def version(self, obj: WebhookDelivery) -> int:
        return obj.event.version

    @admin.display(description="body sent")
    def body(self, obj: WebhookDelivery) -> str:
        return obj.event.body

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.action(description="Redeliver the selected deliveries")
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        count = deliveries_redeliver(ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{count} deliveries queued again", messages.SUCCESS)


@admin.register(TournamentEntry)
class TournamentEntryAdmin(ReadOnlyAdminMixin, GameScopedAdmin):
    list_display = ("board", "player", "joined_at")
    list_select_related = ("board", "board__game", "player")
    search_fields = ("player__external_id",)
