"""A frozen window's page (seasons/admin.py) with the moderation that explains its version: the
audit entries written in the transaction that froze it again (a void: who, when, which match,
why). No other record links a correction to its cause, so it is shown where the diff is."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from anticheat.models import AuditEntry
from seasons.admin import WindowFreezeAdmin
from seasons.models import WindowFreeze

admin.site.unregister(WindowFreeze)


@admin.register(WindowFreeze)
class WindowFreezeWithCauseAdmin(WindowFreezeAdmin):
    fields = ("board", "window", "version", "entries", "frozen_at", "reason", "why", "versions", "moves")
    readonly_fields = fields

    @admin.display(description="why (the audit log)")
    def why(self, obj: WindowFreeze) -> str:
        if obj.version == 1:
            return "the window closed"
        entries = (
            AuditEntry.objects.filter(xact=obj.xact, game_id=obj.board.game_id).select_related("match").order_by("id")
            if obj.xact is not None
            else AuditEntry.objects.none()
        )
        if not entries:
            return obj.reason
        return format_html_join(
            mark_safe("<br>"),
            "<a href='{}'>{}</a> {} by {}: {}{}",
            (
                (
                    reverse("admin:anticheat_auditentry_change", args=[e.pk]),
                    e.created_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    e.get_action_display().lower(),
                    e.actor,
                    e.reason,
                    format_html(
                        " (match <a href='{}'>{}</a>)",
                        reverse("admin:scores_match_change", args=[e.match_id]),
                        e.match_ref,
                    )
                    if e.match_id
                    else "",
                )
                for e in entries
            ),
        )
