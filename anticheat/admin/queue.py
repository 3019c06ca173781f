"""The review queue: held matches and matches a rule flagged, oldest first, each with why and
with the context a moderator needs to decide (where the score would rank, the player's history,
similar recent results, the server key)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import admin, messages
from django.db.models import Prefetch, Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from anticheat import services
from anticheat.admin.voiding import ModerationMixin
from anticheat.models import MatchFlag, ReviewMatch
from scores import encoding
from scores.admin import ReadOnlyAdminMixin
from scores.models import Match, PlayerValue, Result
from scores.scoping import GameScopedAdmin

REVOKE = "scores.change_serverkey"


class FlagInline(admin.TabularInline):
    model = MatchFlag
    extra = 0
    can_delete = False
    fields = readonly_fields = ("rule", "action", "reason", "created_at", "resolved_at")
    verbose_name_plural = "why it is here (rules that held or flagged it)"

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ReviewMatch)
class ReviewMatchAdmin(ModerationMixin, ReadOnlyAdminMixin, GameScopedAdmin):
    """Held matches and matches a rule flagged, oldest first, each with its context."""

    list_display = ("match_id", "game", "status", "why", "what", "ended_at", "received_at", "server")
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
        return (
            super()
            .get_queryset(request)
            .filter(Q(status=Match.Status.HELD) | open_flags)
            .distinct()
            .prefetch_related(
                Prefetch("flags", queryset=MatchFlag.objects.filter(resolved_at__isnull=True).order_by("id")),
                Prefetch("results", queryset=Result.objects.select_related("player", "board").order_by("id")),
            )
        )

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REVOKE)

    @admin.display(description="why")
    def why(self, obj: Match) -> str:
        """Each open flag on its own line: the rule, then its reason in full."""
        flags = list(obj.flags.all())
        if not flags:
            return "held" if obj.status == Match.Status.HELD else "-"
        return format_html_join(
            mark_safe("<br>"), "<strong>{}</strong> ({}): {}", ((f.rule, f.action, f.reason) for f in flags)
        )

    @admin.display(description="results")
    def what(self, obj: Match) -> str:
        return format_html_join(
            mark_safe("<br>"), "{} on {}: {}", ((r.player, r.board.slug, r.score) for r in obj.results.all())
        )

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
            subs = encoding.decode_subpart(board, result.subpart) if board.subscores else None
            encoded = encoding.encode(board, result.score, obj.ended_at, subs)
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
                    str(player),
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

    @admin.action(description="Revoke the server keys of selected matches", permissions=["revoke"])
    def revoke_server_key(self, request: HttpRequest, queryset: QuerySet[ReviewMatch]) -> None:
        keys = {m.server_key for m in queryset.select_related("server_key") if m.server_key is not None}
        for key in keys:
            services.server_key_revoke(key=key, actor=self._actor(request))
        self.message_user(request, f"Revoked {len(keys)} key(s).", messages.SUCCESS)
