"""Void and approve from wherever a moderator looks at matches (the Match list and page, the
review queue). Every void, of selected matches or of a player's or server key's matches in a
time range, first shows its preview (anticheat/previews.py): the matches, every player in them
(opponents included), and per board window each one's value and rank before and after, plus the
frozen windows it re-freezes. The confirm applies exactly that, or shows the new preview."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from anticheat import previews, services
from scores.models import Game, Match, Player, ServerKey
from scores.scoping import game_scope

MODERATE = "anticheat.moderate_match"
MAX_SELECTED = 500  # matches one selection may void; a player's or key's matches go through bulk-void

_reason_widget = forms.Textarea(attrs={"rows": 3, "cols": 70, "placeholder": "why (kept in the audit log)"})


class ReasonForm(forms.Form):
    # required at the confirm only: the preview comes first
    reason = forms.CharField(widget=_reason_widget, max_length=2000, required=False)


class BulkVoidForm(forms.Form):
    game = forms.ModelChoiceField(Game.objects.order_by("slug"))
    player = forms.CharField(required=False, help_text="a player id, or")
    server_key = forms.CharField(required=False, help_text="a server key id (sk_...)")
    since = forms.DateTimeField(help_text="matches that ended at or after (UTC, YYYY-MM-DD HH:MM)")
    until = forms.DateTimeField(help_text="and before")
    reason = forms.CharField(widget=_reason_widget, max_length=2000, required=False)

    def __init__(self, *args: Any, games: QuerySet[Game], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["game"].queryset = games  # type: ignore[attr-defined]  # the user's games only

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


def _ids(raw: str) -> list[int]:
    try:
        return sorted({int(x) for x in raw.split(",") if x.strip()})
    except ValueError:
        return []


class ModerationMixin:
    """Actions and pages for a ModelAdmin of matches: approve and void the selection, void one
    match from its page, void a player's or server key's matches in a time range."""

    actions = ["approve", "void"]
    change_form_template = "admin/anticheat/match_change_form.html"
    change_list_template = "admin/anticheat/match_change_list.html"

    # --- wiring -------------------------------------------------------------------------------

    def _url_name(self, what: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{what}"

    def get_urls(self) -> list:
        view = self.admin_site.admin_view
        return [
            path("void/", view(self.void_view), name=self._url_name("void")),
            path("bulk-void/", view(self.bulk_void_view), name=self._url_name("bulk_void")),
            path("<int:pk>/approve/", view(self.approve_view), name=self._url_name("approve")),
            *super().get_urls(),
        ]

    def has_moderate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(MODERATE)

    def _actor(self, request: HttpRequest) -> services.Actor:
        return services.Actor.of_user(request.user)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        extra = {"bulk_void_url": reverse(f"admin:{self._url_name('bulk_void')}")}
        return super().changelist_view(request, {**(extra_context or {}), **extra})

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        extra: dict[str, Any] = {"can_moderate": self.has_moderate_permission(request) and object_id.isdigit()}
        if extra["can_moderate"]:
            pk = int(object_id)
            extra["void_url"] = reverse(f"admin:{self._url_name('void')}") + f"?ids={pk}"
            extra["approve_url"] = reverse(f"admin:{self._url_name('approve')}", args=[pk])
            # approving clears open flags too: offer it for held and for flagged matches
            extra["can_approve"] = Match.objects.filter(
                Q(status=Match.Status.HELD) | Q(flags__resolved_at__isnull=True, flags__isnull=False), pk=pk
            ).exists()
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    # --- approve --------------------------------------------------------------------------------

    @admin.action(description="Approve selected matches (they count on the boards)", permissions=["moderate"])
    def approve(self, request: HttpRequest, queryset: QuerySet[Match]) -> None:
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

    def approve_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        if not self.has_moderate_permission(request):
            raise PermissionDenied
        back = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[pk])
        if request.method != "POST":
            return HttpResponseRedirect(back)
        match = get_object_or_404(game_scope(Match.objects.select_related("game"), user=request.user), pk=pk)
        try:
            services.match_approve(match=match, actor=self._actor(request))
            self.message_user(request, f"Approved {match.match_id}: it counts on the boards.", messages.SUCCESS)
        except services.MatchVoided as exc:
            self.message_user(request, str(exc), messages.ERROR)
        return HttpResponseRedirect(back)

    # --- void -------------------------------------------------------------------------------------

    @admin.action(description="Void selected matches (preview first, then a reason)", permissions=["moderate"])
    def void(self, request: HttpRequest, queryset: QuerySet[Match]) -> HttpResponse | None:
        pks = list(queryset.values_list("pk", flat=True)[: MAX_SELECTED + 1])
        if len(pks) > MAX_SELECTED:
            self.message_user(
                request,
                f"Select at most {MAX_SELECTED} matches; for a player's or a server key's matches use "
                "“Void matches of a player or server key…”.",
                messages.ERROR,
            )
            return None
        return HttpResponseRedirect(reverse(f"admin:{self._url_name('void')}") + "?ids=" + ",".join(map(str, pks)))

    def void_view(self, request: HttpRequest) -> HttpResponse:
        """Preview (GET) and confirm (POST) a void of the matches in ?ids=."""
        if not self.has_moderate_permission(request):
            raise PermissionDenied
        pks = _ids(request.GET.get("ids", ""))
        # ids of another game's matches (a forged URL) select nothing
        matches = list(game_scope(Match.objects.filter(pk__in=pks), user=request.user).select_related("game"))
        games = {m.game_id: m.game for m in matches}
        if not matches or len(games) != 1:
            self.message_user(request, "Select the matches of one game to void.", messages.ERROR)
            return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))
        game = next(iter(games.values()))
        actor = self._actor(request)

        def apply(reason: str) -> list[int]:
            return services.matches_void(game=game, match_pks=[m.pk for m in matches], reason=reason, actor=actor)

        form = ReasonForm(request.POST or None)
        title = f"Void {len(matches)} match(es) of {game.slug}"
        return self._void_flow(request, form, game, apply, title)

    def bulk_void_view(self, request: HttpRequest) -> HttpResponse:
        """Void every match of a player or of a server key in a time range (preview first)."""
        if not self.has_moderate_permission(request):
            raise PermissionDenied
        form = BulkVoidForm(request.POST or None, games=game_scope(Game.objects.order_by("slug"), user=request.user))
        title = "Void matches of a player or server key"
        if request.method != "POST" or not form.is_valid():
            return self._render(request, title, form, None, bulk=True)
        data = form.cleaned_data
        target, actor = data["target"], self._actor(request)
        window = {"since": data["since"], "until": data["until"]}

        def apply(reason: str) -> list[int]:
            if isinstance(target, Player):
                return services.matches_void_by_player(player=target, reason=reason, actor=actor, **window)
            return services.matches_void_by_server_key(key=target, reason=reason, actor=actor, **window)

        return self._void_flow(request, form, data["game"], apply, title, bulk=True)

    def _void_flow(
        self,
        request: HttpRequest,
        form: forms.Form,
        game: Game,
        apply: Callable[[str], list[int]],
        title: str,
        bulk: bool = False,
    ) -> HttpResponse:
        confirming = request.method == "POST" and "confirm" in request.POST and form.is_valid()
        reason = form.cleaned_data.get("reason", "") if form.is_valid() else ""
        if confirming and not reason.strip():
            form.add_error("reason", "Say why: the reason is kept in the audit log.")
            confirming = False
        if confirming:
            try:
                voided = previews.void_confirm(
                    game=game, apply=apply, reason=reason, token=request.POST.get("token", "")
                )
            except signing.BadSignature:
                return HttpResponseBadRequest("this confirmation does not come from a preview")
            except previews.PreviewOutdated as outdated:
                self.message_user(
                    request,
                    "The boards changed since the preview (a result arrived or another moderator acted): "
                    "nothing was voided. Here is the preview as things stand now.",
                    messages.WARNING,
                )
                return self._render(request, title, form, outdated.fresh, bulk=bulk)
            audit = reverse("admin:anticheat_auditentry_changelist") + f"?game__id__exact={game.pk}"
            self.message_user(
                request,
                format_html("Voided {} match(es). <a href='{}'>The audit log</a> has the entries.", len(voided), audit),
                messages.SUCCESS,
            )
            return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))
        preview = previews.void_preview(game=game, apply=apply, reason=reason)
        return self._render(request, title, form, preview, bulk=bulk)

    def _render(
        self, request: HttpRequest, title: str, form: forms.Form, preview: previews.VoidPreview | None, bulk: bool
    ) -> TemplateResponse:
        return TemplateResponse(
            request,
            "admin/anticheat/void_preview.html",
            {
                **self.admin_site.each_context(request),
                "title": title,
                "form": form,
                "preview": preview,
                "bulk": bulk,
                "opts": self.opts,
                "match_url": "admin:scores_match_change",
            },
        )
