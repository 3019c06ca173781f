"""The moderators' admin: the review queue (held and flagged matches, with context), the
audit log (read-only for everyone), and actions that each call a service."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from anticheat import services
from anticheat.models import AuditEntry, MatchFlag, ReviewMatch
from scores import encoding
from scores.models import Game, Match, Player, PlayerValue, Result, ServerKey

MODERATE = "anticheat.moderate_match"
REVOKE = "scores.change_serverkey"


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 60}), max_length=2000)


class BulkVoidForm(forms.Form):
    game = forms.ModelChoiceField(Game.objects.all())
    player = forms.CharField(required=False, help_text="a player id, or")
    server_key = forms.CharField(required=False, help_text="a server key id (sk_...)")
    since = forms.DateTimeField(help_text="matches that ended at or after (UTC, YYYY-MM-DD HH:MM)")
    until = forms.DateTimeField(help_text="and before")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 60}), max_length=2000)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if bool(data.get("player")) == bool(data.get("server_key")):
            raise forms.ValidationError("name either a player or a server key")
        game = data.get("game")
        if game and data.get("player"):
            data["target"] = Player.objects.filter(game=game, external_id=data["player"]).first()
            if data["target"] is None:
                raise forms.ValidationError("unknown player in this game")
        if game and data.get("server_key"):
            data["target"] = ServerKey.objects.filter(game=game, key_id=data["server_key"]).first()
            if data["target"] is None:
                raise forms.ValidationError("unknown server key in this game")
        if data.get("since") and data.get("until") and data["until"] <= data["since"]:
            raise forms.ValidationError("until must be after since")
        return data


class FlagInline(admin.TabularInline):
    model = MatchFlag
    extra = 0
    can_delete = False
    fields = readonly_fields = ("rule", "action", "reason", "created_at", "resolved_at")

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ReviewMatch)
class ReviewMatchAdmin(admin.ModelAdmin):
    """Held matches and matches a rule flagged, oldest first, each with its context."""

    list_display = ("match_id", "game", "status", "why", "ended_at", "received_at", "server")
    list_filter = ("game", "status")
    search_fields = ("match_id",)
    list_select_related = ("game", "server_key")
    ordering = ("received_at",)
    actions = ["approve", "void", "revoke_server_key"]
    fields = ("match_id", "game", "status", "ended_at", "received_at", "server", "context")
    readonly_fields = fields
    inlines = [FlagInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReviewMatch]:
        open_flags = Q(flags__resolved_at__isnull=True, flags__isnull=False)
        return super().get_queryset(request).filter(Q(status=Match.Status.HELD) | open_flags).distinct()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # nothing is edited here: actions call services

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_moderate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(MODERATE)

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REVOKE)

    @admin.display(description="why")
    def why(self, obj: Match) -> str:
        return "; ".join(f.reason for f in obj.flags.all() if f.resolved_at is None)[:200]

    @admin.display(description="server key")
    def server(self, obj: Match) -> str:
        key = obj.server_key
        if key is None:
            return "-"
        return f"{key.name} ({key.key_id})" + (" REVOKED" if key.revoked_at else "")

    @admin.display(description="context")
    def context(self, obj: Match) -> str:
        blocks = []
        for result in Result.objects.filter(match=obj).select_related("player", "board"):
            board, player = result.board, result.player
            encoded = encoding.encode(board, result.score, obj.ended_at)
            if board.mode == "total":
                current = PlayerValue.objects.filter(board=board, window="all", player=player).first()
                encoded = encoding.encode(board, result.score + (current.value if current else 0), obj.ended_at)
            # where the score would rank on the all-time board (the rank-order index)
            better = PlayerValue.objects.filter(board=board, window="all", encoded__gt=encoded).count()
            total = PlayerValue.objects.filter(board=board, window="all").count()
            history = (
                Result.objects.filter(player=player, board=board)
                .exclude(match=obj)
                .select_related("match")
                .order_by("-match__ended_at")[:10]
            )
            span = max(1, (board.max_score - board.min_score) // 50)
            similar = (
                Result.objects.filter(
                    board=board,
                    score__range=(result.score - span, result.score + span),
                    match__received_at__gte=timezone.now() - timedelta(days=7),
                )
                .exclude(match=obj)
                .select_related("player", "match")
                .order_by("-match__received_at")[:10]
            )
            blocks.append(
                format_html(
                    "<div style='margin-bottom:1em'><strong>{} on {}: {}</strong> would rank <strong>#{}</strong> of {} "
                    "(all-time)<br>History (latest 10): {}<br>Similar recent results: {}</div>",
                    player.external_id,
                    board.slug,
                    result.score,
                    better + 1,
                    total,
                    format_html_join(
                        ", ", "{} ({}, {})", ((r.score, r.match.ended_at.date(), r.match.status) for r in history)
                    )
                    or "none",
                    format_html_join(
                        ", ",
                        "{} by {} ({})",
                        ((r.score, r.player.external_id, r.match.match_id) for r in similar),
                    )
                    or "none",
                )
            )
        return format_html_join("", "{}", ((b,) for b in blocks))

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        extra = {"bulk_void_url": reverse("admin:anticheat_reviewmatch_bulk_void")}
        return super().changelist_view(request, {**(extra_context or {}), **extra})

    def get_urls(self) -> list:
        return [
            path("bulk-void/", self.admin_site.admin_view(self.bulk_void_view), name="anticheat_reviewmatch_bulk_void"),
            *super().get_urls(),
        ]

    def _actor(self, request: HttpRequest) -> services.Actor:
        return services.Actor.of_user(request.user)

    @admin.action(description="Approve selected matches (they count on the boards)", permissions=["moderate"])
    def approve(self, request: HttpRequest, queryset: QuerySet[ReviewMatch]) -> None:
        done, refused = 0, []
        for match in queryset.select_related("game"):
            try:
                services.match_approve(match=match, actor=self._actor(request))
                done += 1
            except services.MatchVoided:
                refused.append(match.match_id)
        self.message_user(request, f"Approved {done} match(es).", messages.SUCCESS)
        if refused:
            self.message_user(request, f"Voided, not approved: {', '.join(refused)}", messages.WARNING)

    @admin.action(description="Void selected matches (asks for a reason)", permissions=["moderate"])
    def void(self, request: HttpRequest, queryset: QuerySet[ReviewMatch]) -> HttpResponse | None:
        form = ReasonForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            by_game: dict[int, list[Match]] = {}
            for match in queryset.select_related("game"):
                by_game.setdefault(match.game_id, []).append(match)
            voided = 0
            for matches in by_game.values():
                voided += len(
                    services.matches_void(
                        game=matches[0].game,
                        match_pks=[m.pk for m in matches],
                        reason=form.cleaned_data["reason"],
                        actor=self._actor(request),
                    )
                )
            self.message_user(request, f"Voided {voided} match(es).", messages.SUCCESS)
            return None
        return TemplateResponse(
            request,
            "admin/anticheat/void_form.html",
            {
                **self.admin_site.each_context(request),
                "title": "Void matches",
                "matches": queryset,
                "form": form,
                "action": "void",
                "submit_label": "Void these matches",
                "opts": self.model._meta,
            },
        )

    @admin.action(description="Revoke the server keys of selected matches", permissions=["revoke"])
    def revoke_server_key(self, request: HttpRequest, queryset: QuerySet[ReviewMatch]) -> None:
        keys = {m.server_key for m in queryset.select_related("server_key") if m.server_key is not None}
        for key in keys:
            services.server_key_revoke(key=key, actor=self._actor(request))
        self.message_user(request, f"Revoked {len(keys)} key(s).", messages.SUCCESS)

    def bulk_void_view(self, request: HttpRequest) -> HttpResponse:
        """Void every match of a player or of a server key in a time range."""
        if not self.has_moderate_permission(request):
            raise PermissionDenied
        form = BulkVoidForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            target = data["target"]
            kwargs = {"since": data["since"], "until": data["until"], "reason": data["reason"]}
            if isinstance(target, Player):
                voided = services.matches_void_by_player(player=target, actor=self._actor(request), **kwargs)
            else:
                voided = services.matches_void_by_server_key(key=target, actor=self._actor(request), **kwargs)
            self.message_user(request, f"Voided {len(voided)} match(es).", messages.SUCCESS)
            return TemplateResponse(
                request,
                "admin/anticheat/void_form.html",
                {
                    **self.admin_site.each_context(request),
                    "title": "Void matches of a player or server key",
                    "form": BulkVoidForm(),
                    "submit_label": "Void matching matches",
                    "opts": self.model._meta,
                },
            )
        return TemplateResponse(
            request,
            "admin/anticheat/void_form.html",
            {
                **self.admin_site.each_context(request),
                "title": "Void matches of a player or server key",
                "form": form,
                "submit_label": "Void matching matches",
                "opts": self.model._meta,
            },
        )


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Append-only: nobody, superusers included, adds, changes or deletes an entry here."""

    list_display = ("created_at", "action", "actor", "game", "match_ref", "player", "server_key", "short_reason")
    list_filter = ("action", "game")
    search_fields = ("match_ref", "actor", "reason")
    list_select_related = ("game", "player", "server_key")
    date_hierarchy = "created_at"
    show_full_result_count = False

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        return [f.name for f in AuditEntry._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(description="reason")
    def short_reason(self, obj: AuditEntry) -> str:
        return obj.reason[:120]
