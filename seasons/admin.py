"""Frozen standings for operators and moderators: each version read-only, with who moved since
the version before it; CSV of any window, frozen or current."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from leaderboard_project.replicas import replica_reads
from scores import windows
from scores.admin import ReadOnlyAdminMixin
from scores.models import Board
from scores.scoping import GameScopedAdmin, game_scope
from scores.selectors import cached_board
from seasons.export import csv_response, window_csv
from seasons.models import WindowClose, WindowFreeze
from seasons.selectors import freeze_moves, freeze_of

MOVES_SHOWN = 200


class ExportForm(forms.Form):
    board = forms.ModelChoiceField(Board.objects.select_related("game").order_by("game__slug", "id"))
    window = forms.CharField(
        initial="all",
        help_text="current: all, daily, weekly, monthly, season; or explicit: daily:2026-11-28, weekly:2026-W48, "
        "monthly:2026-11, season:s1 (a region's board: eu/weekly:2026-W48)",
    )
    version = forms.IntegerField(
        min_value=1, required=False, help_text="a frozen version (default: the latest, or the current values)"
    )

    def __init__(self, *args: object, boards: QuerySet[Board], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["board"].queryset = boards  # type: ignore[attr-defined]  # the user's games' boards

    def clean(self) -> dict:
        data = super().clean()
        board = data.get("board")
        if board is None or not data.get("window"):
            return data
        config = cached_board(board.game.slug, board_slug=board.slug)
        spec = data["window"].strip()
        region, base = windows.split_region(spec)
        tz = config.reset_timezone
        if region:
            found = config.region(region)
            if found is None:
                raise forms.ValidationError(f"{board} has no region {region!r}")
            tz = found.timezone
        try:
            window = windows.resolve(base, timezone.now(), tz, config.windows, config.seasons)
        except windows.UnknownWindow as exc:
            raise forms.ValidationError(str(exc)) from None
        data["config"], data["window"] = config, windows.in_region(region, window) if region else window
        data["freeze"] = freeze_of(config.id, window=data["window"], version=data.get("version"))
        if data.get("version") and data["freeze"] is None:
            raise forms.ValidationError(f"{data['window']} has no frozen version {data['version']}")
        return data


@admin.register(WindowFreeze)
class WindowFreezeAdmin(ReadOnlyAdminMixin, GameScopedAdmin):
    """Frozen standings are a record for reward payout: read-only, exported as CSV. A window
    corrected after its freeze (a void) has several versions; each says who moved."""

    list_display = ("board", "window", "version_label", "entries", "frozen_at", "reason")
    list_filter = ("board__game", "board")
    list_select_related = ("board__game",)
    search_fields = ("window",)
    fields = ("board", "window", "version", "entries", "frozen_at", "reason", "versions", "moves")
    readonly_fields = fields
    actions = ["export_csv"]
    change_list_template = "admin/seasons/windowfreeze_change_list.html"

    def get_urls(self) -> list:
        view = self.admin_site.admin_view(replica_reads(self.export_view))
        return [path("export/", view, name="seasons_windowfreeze_export"), *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        extra = {"export_url": reverse("admin:seasons_windowfreeze_export")}
        return super().changelist_view(request, {**(extra_context or {}), **extra})

    @admin.display(description="version")
    def version_label(self, obj: WindowFreeze) -> str:
        return f"v{obj.version} (corrected)" if obj.version > 1 else "v1"

    @admin.display(description="all versions")
    def versions(self, obj: WindowFreeze) -> str:
        rows = WindowFreeze.objects.filter(board_id=obj.board_id, window=obj.window).order_by("version")
        return format_html_join(
            mark_safe("<br>"),
            "<a href='{}'>v{}</a>{}: frozen {} ({} players): {}",
            (
                (
                    reverse("admin:seasons_windowfreeze_change", args=[f.pk]),
                    f.version,
                    " (this one)" if f.pk == obj.pk else "",
                    f.frozen_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    f.entries,
                    f.reason,
                )
                for f in rows
            ),
        )

    @admin.display(description="who moved since the previous version")
    def moves(self, obj: WindowFreeze) -> str:
        count, moves = freeze_moves(obj, limit=MOVES_SHOWN)
        if obj.version == 1:
            return "the first version: nothing to compare with"
        if not count:
            return "nobody moved"

        def where(position: int | None, rank: int | None, value: int | None) -> str:
            return "–" if position is None else f"#{rank} (position {position}), {value:,}"

        rows = format_html_join(
            "",
            "<tr data-player='{}'><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    m.player,
                    f"{m.display_name} ({m.player})" if m.display_name else m.player,
                    where(m.old_position, m.old_rank, m.old_value),
                    where(m.new_position, m.new_rank, m.new_value),
                    "removed" if m.new_position is None else _move(m.old_position, m.new_position),
                )
                for m in moves
            ),
        )
        shown = f"{count} player(s) moved" + (f"; the first {len(moves)}" if count > len(moves) else "")
        return format_html(
            "<p>{}</p><table id='freeze-moves'><tr><th>player</th><th>before</th><th>after</th><th>move</th></tr>{}"
            "</table>",
            shown,
            rows,
        )

    @admin.action(description="Export standings as CSV")
    def export_csv(self, request: HttpRequest, queryset: QuerySet[WindowFreeze]) -> HttpResponse:
        freezes = list(queryset.select_related("board__game").order_by("board_id", "window", "version"))
        parts = []
        for i, f in enumerate(freezes):
            lines = window_csv(cached_board(f.board.game.slug, board_slug=f.board.slug), f.window, f)
            parts.append(lines if i == 0 else _without_header(lines))
        response = HttpResponse((line for part in parts for line in part), content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="standings.csv"'
        return response

    def export_view(self, request: HttpRequest) -> HttpResponse:
        """CSV of any window: a frozen version, or the current values of a window not frozen."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        boards = game_scope(Board.objects.select_related("game").order_by("game__slug", "id"), user=request.user)
        form = ExportForm(request.GET or None, boards=boards)
        if request.GET and form.is_valid():
            data = form.cleaned_data
            return csv_response(data["config"], data["window"], data["freeze"])
        return TemplateResponse(
            request,
            "admin/seasons/export_form.html",
            {**self.admin_site.each_context(request), "title": "Export a window as CSV", "form": form,
             "opts": self.opts},
        )  # fmt: skip


def _move(old: int | None, new: int) -> str:
    if old is None:
        return "new"
    if old == new:
        return "="
    return f"▲ {old - new}" if new < old else f"▼ {new - old}"


def _without_header(lines):  # noqa: ANN001, ANN202
    lines = iter(lines)
    first = next(lines)
    yield first.split("\r\n", 1)[1] if "\r\n" in first else ""
    yield from lines


@admin.register(WindowClose)
class WindowCloseAdmin(ReadOnlyAdminMixin, GameScopedAdmin):
    """Why a window is not frozen yet (a season waiting on held matches), or its last freeze."""

    list_display = ("board", "window", "state", "detail", "checked_at")
    list_filter = ("state", "board__game")
    list_select_related = ("board__game",)
    readonly_fields = ("board", "window", "state", "detail", "checked_at")
