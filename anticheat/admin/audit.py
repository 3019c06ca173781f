"""The audit log: every reject, hold, flag, approve, void, bulk void and key revocation, newest
first. Its targets are columns of their own, with links: the match, the player, the server key,
and the frozen windows the action re-froze (the versions written in the same transaction,
AuditEntry.xact). Filters by actor, action, game and date. Nobody, superusers included, adds,
changes or deletes an entry here."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import F, OuterRef, Q, QuerySet, Value
from django.db.models.fields import CharField
from django.db.models.functions import Concat
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from anticheat.models import AuditEntry
from scores.admin import ReadOnlyAdminMixin
from scores.scoping import GameScopedAdmin, game_scope
from seasons.models import WindowFreeze

REASON_CHARS = 90


class ActorFilter(admin.SimpleListFilter):
    title = "actor"
    parameter_name = "actor"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # only the actors of the user's games: another game's moderators are not named
        users = (
            game_scope(AuditEntry.objects.filter(actor_user__isnull=False), user=request.user)
            .values_list("actor_user_id", "actor_user__username")
            .distinct()
            .order_by("actor_user__username")
        )
        return [(f"user:{pk}", f"user {name}") for pk, name in users] + [
            ("keys", "a server key (the API)"),
            ("rules", "the anti-cheat rules"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AuditEntry]) -> QuerySet[AuditEntry]:
        value = self.value() or ""
        if value.startswith("user:") and value[5:].isdigit():
            return queryset.filter(actor_user_id=int(value[5:]))
        if value == "keys":
            return queryset.filter(actor_key__isnull=False)
        if value == "rules":
            return queryset.filter(actor_user__isnull=True, actor_key__isnull=False) | queryset.filter(
                actor_user__isnull=True, actor_key__isnull=True
            )
        return queryset


def _bulk(entry: AuditEntry, key: str) -> str:
    """A bulk void names its player or server key in its details (it has no single row)."""
    details = entry.details or {}
    return str(details.get(key) or (details.get("bulk") or {}).get(key) or "")


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, GameScopedAdmin):
    """Append-only: nobody, superusers included, adds, changes or deletes an entry here."""

    # the game is a filter, not a column: the log must fit beside the navigation and the filters
    list_display = (
        "when",
        "action",
        "actor",
        "target_match",
        "target_player",
        "target_key",
        "target_windows",
        "short_reason",
    )
    list_filter = (ActorFilter, "action", "game", ("created_at", admin.DateFieldListFilter))
    search_fields = ("match_ref", "actor", "reason")
    search_help_text = "A match id, a player id, a server key id, an actor or words of the reason."
    list_select_related = ("game", "player", "server_key", "match")
    date_hierarchy = "created_at"
    show_full_result_count = False
    fields = (
        "created_at",
        "action",
        "actor",
        "game",
        "target_match",
        "target_player",
        "target_key",
        "target_windows",
        "reason",
        "details_text",
    )
    readonly_fields = fields

    class Media:
        css = {"all": ["anticheat/moderation.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEntry]:
        freezes = WindowFreeze.objects.filter(xact=OuterRef("xact"), board__game_id=OuterRef("game_id")).order_by(
            "board_id", "window"
        )
        label = Concat(
            F("id"), Value("|"), F("board__slug"), Value(" "), F("window"), Value(" v"), F("version"),
            output_field=CharField(),
        )  # fmt: skip
        return super().get_queryset(request).annotate(refrozen=ArraySubquery(freezes.values(text=label)))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[AuditEntry], search_term: str
    ) -> tuple[QuerySet[AuditEntry], bool]:
        found, duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term:
            found |= queryset.filter(
                Q(player__external_id=term)
                | Q(server_key__key_id=term)
                | Q(details__bulk__player=term)
                | Q(details__player=term)
                | Q(details__bulk__server_key=term)
                | Q(details__server_key=term)
            )
        return found, duplicates

    @admin.display(description="when (UTC)", ordering="created_at")
    def when(self, obj: AuditEntry) -> str:
        return obj.created_at.strftime("%Y-%m-%d %H:%M:%S")

    @admin.display(description="match")
    def target_match(self, obj: AuditEntry) -> str:
        if obj.match_id:
            url = reverse("admin:scores_match_change", args=[obj.match_id])
            return format_html("<a href='{}'>{}</a>", url, obj.match_ref or obj.match.match_id)
        return obj.match_ref or "-"  # a rejected match was never stored

    @admin.display(description="player")
    def target_player(self, obj: AuditEntry) -> str:
        if obj.player_id:
            url = reverse("admin:scores_player_change", args=[obj.player_id])
            return format_html("<a href='{}'>{}</a>", url, str(obj.player))
        external_id = _bulk(obj, "player")
        if not external_id:
            return "-"
        url = reverse("admin:scores_player_changelist") + f"?q={external_id}&game__id__exact={obj.game_id}"
        return format_html("<a href='{}'>{}</a>", url, external_id)

    @admin.display(description="server key")
    def target_key(self, obj: AuditEntry) -> str:
        key_id = obj.server_key.key_id if obj.server_key_id else _bulk(obj, "server_key")
        if not key_id:
            return "-"
        return format_html("<a href='{}'>{}</a>", reverse("admin:scores_serverkey_changelist") + f"?q={key_id}", key_id)

    @admin.display(description="re-froze")
    def target_windows(self, obj: AuditEntry) -> str:
        refrozen = [item.split("|", 1) for item in getattr(obj, "refrozen", None) or []]
        if not refrozen:
            return "-"
        return format_html_join(
            mark_safe("<br>"),
            "<a href='{}'>{}</a>",
            ((reverse("admin:seasons_windowfreeze_change", args=[pk]), label) for pk, label in refrozen),
        )

    @admin.display(description="reason")
    def short_reason(self, obj: AuditEntry) -> str:
        return obj.reason if len(obj.reason) <= REASON_CHARS else obj.reason[: REASON_CHARS - 1] + "…"

    @admin.display(description="details")
    def details_text(self, obj: AuditEntry) -> str:
        return format_html("<pre class='audit-details'>{}</pre>", json.dumps(obj.details, indent=2, sort_keys=True))
