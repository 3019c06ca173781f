import csv

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from seasons.models import Standing, StandingChange, WindowClose, WindowFreeze


class StandingChangeInline(admin.TabularInline):
    model = StandingChange
    extra = 0
    can_delete = False
    fields = ("player", "old_rank", "new_rank", "old_value", "new_value")
    readonly_fields = fields
    verbose_name_plural = "who moved since the previous version"

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(WindowFreeze)
class WindowFreezeAdmin(admin.ModelAdmin):
    """Frozen standings are a record for reward payout: read-only, exported as CSV."""

    list_display = ("board", "window", "version", "entries", "frozen_at", "reason")
    list_filter = ("board__game", "board")
    search_fields = ("window",)
    readonly_fields = ("board", "window", "version", "entries", "frozen_at", "reason")
    inlines = [StandingChangeInline]
    actions = ["export_csv"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.action(description="Export standings as CSV")
    def export_csv(self, request: HttpRequest, queryset: QuerySet[WindowFreeze]) -> HttpResponse:
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="standings.csv"'
        writer = csv.writer(response)
        writer.writerow(
            ["game", "board", "window", "version", "rank", "position", "player", "display_name", "score", "reached_at"]
        )
        for freeze in queryset.select_related("board__game").order_by("board_id", "window", "version"):
            rows = Standing.objects.filter(freeze=freeze).select_related("player").order_by("position").iterator(2000)
            for s in rows:
                writer.writerow(
                    [
                        freeze.board.game.slug,
                        freeze.board.slug,
                        freeze.window,
                        freeze.version,
                        s.rank,
                        s.position,
                        s.player.external_id,
                        s.player.display_name,
                        s.value,
                        s.reached_at.isoformat(),
                    ]
                )
        return response


@admin.register(WindowClose)
class WindowCloseAdmin(admin.ModelAdmin):
    """Why a window is not frozen yet (a season waiting on held matches), or its last freeze."""

    list_display = ("board", "window", "state", "detail", "checked_at")
    list_filter = ("state", "board__game")
    readonly_fields = ("board", "window", "state", "detail", "checked_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
