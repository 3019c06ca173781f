"""Every match and every player, as a moderator needs them. The base pages are scores/admin.py's;
these extend them with what moderation adds: void and approve (anticheat/admin/voiding.py),
match search by player id or name, server key, board and time range, and on a player's page
their results per board (newest first, each linking to its match) and current ranks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Lower
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.html import format_html, format_html_join

from anticheat.admin.voiding import ModerationMixin, ReasonForm
from anticheat.services import Actor, player_erase
from scores import encoding, windows
from scores.admin import MatchAdmin, PlayerAdmin, ResultInline
from scores.auth import RedisUnreachable
from scores.models import Board, Game, Match, Player, Result, ServerKey
from scores.scoping import game_scope
from scores.selectors import durable_standings, game_config
from scores.services import player_tokens_revoke

PLAYERS_PER_SEARCH = 1000  # players a name prefix may match in one search
RESULTS_PER_BOARD = 20  # on a player's page


def match_link(match: Match) -> str:
    return format_html("<a href='{}'>{}</a>", reverse("admin:scores_match_change", args=[match.pk]), match.match_id)


def player_link(player: Player) -> str:
    return format_html("<a href='{}'>{}</a>", reverse("admin:scores_player_change", args=[player.pk]), str(player))


class BoardFilter(admin.SimpleListFilter):
    title = "board"
    parameter_name = "board"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[int, str]]:
        boards = game_scope(Board.objects.select_related("game"), user=request.user)
        return [(b.pk, str(b)) for b in boards.order_by("game__slug", "id")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Match]) -> QuerySet[Match]:
        if not self.value():
            return queryset
        try:
            board_id = int(self.value())
        except ValueError:
            raise IncorrectLookupParameters("board") from None
        return queryset.filter(Exists(Result.objects.filter(match=OuterRef("pk"), board_id=board_id)))


class EndedBetweenFilter(admin.ListFilter):
    """A time range on ended_at: ?ended_from=...&ended_to=... (UTC; a date or a date-time)."""

    title = "ended between (UTC)"
    template = "admin/anticheat/range_filter.html"
    parameters = ("ended_from", "ended_to")

    def __init__(self, request: HttpRequest, params: dict, model: Any, model_admin: Any) -> None:
        super().__init__(request, params, model, model_admin)
        self.values: dict[str, str] = {}
        for name in self.parameters:
            if name in params:
                value = params.pop(name)
                value = value[-1] if isinstance(value, list) else value
                self.values[name] = value
                self.used_parameters[name] = value

    def has_output(self) -> bool:
        return True

    def expected_parameters(self) -> list[str]:
        return list(self.parameters)

    @staticmethod
    def _instant(value: str):  # noqa: ANN205
        moment = parse_datetime(value.replace(" ", "T")) if value else None
        if moment is None and value:
            day = parse_date(value)
            moment = datetime(day.year, day.month, day.day) if day else None
        if value and moment is None:
            raise IncorrectLookupParameters(f"not a date or date-time: {value!r}")
        if moment is not None and timezone.is_naive(moment):
            moment = moment.replace(tzinfo=UTC)
        return moment

    def queryset(self, request: HttpRequest, queryset: QuerySet[Match]) -> QuerySet[Match]:
        since = self._instant(self.values.get("ended_from", ""))
        until = self._instant(self.values.get("ended_to", ""))
        if since is not None:
            queryset = queryset.filter(ended_at__gte=since)
        if until is not None:
            queryset = queryset.filter(ended_at__lt=until)
        return queryset

    def choices(self, changelist: Any) -> list[dict[str, Any]]:
        hidden = []
        for key, value in changelist.params.items():
            if key not in self.parameters:
                hidden.extend((key, v) for v in (value if isinstance(value, list) else [value]))
        return [
            {
                "values": self.values,
                "hidden": hidden,
                "clear": changelist.get_query_string(remove=list(self.parameters)),
            }
        ]


class MatchResultInline(ResultInline):
    fields = readonly_fields = ("player_page", "board", "score", "metadata")
    verbose_name_plural = "results (one per player and board)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Result]:
        return super().get_queryset(request).select_related("player", "board__game")

    @admin.display(description="player")
    def player_page(self, obj: Result) -> str:
        return player_link(obj.player)


admin.site.unregister(Match)


@admin.register(Match)
class MatchModerationAdmin(ModerationMixin, MatchAdmin):
    list_display = ("match_id", "game", "status", "players", "ended_at", "received_at", "server_key")
    list_filter = ("game", "status", BoardFilter, EndedBetweenFilter)
    search_fields = ("match_id",)  # the search box; get_search_results says what it matches
    search_help_text = "A match id, a player id or the start of a display name, or a server key id or name."
    inlines = [MatchResultInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Match]:
        return super().get_queryset(request).prefetch_related("results__player")

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # nothing on a match is edited: void and approve are actions (no Save buttons)

    @admin.display(description="players")
    def players(self, obj: Match) -> str:
        names = sorted({str(r.player) for r in obj.results.all()})
        shown = ", ".join(names[:4])
        return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Match], search_term: str
    ) -> tuple[QuerySet[Match], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        # the user's games: lets the (game, ...) indexes serve, and keeps the player cap for them
        games = list(game_scope(Game.objects.all(), user=request.user).values_list("pk", flat=True))
        player_ids = list(
            Player.objects.annotate(name=Lower("display_name"))
            .filter(Q(external_id=term) | Q(name__startswith=term.lower()), game_id__in=games)
            .values_list("pk", flat=True)[:PLAYERS_PER_SEARCH]
        )
        keys = ServerKey.objects.filter(Q(key_id=term) | Q(name__iexact=term))
        found = (
            Q(game_id__in=games, match_id=term)
            | Q(Exists(Result.objects.filter(match=OuterRef("pk"), player_id__in=player_ids)))
            | Q(server_key__in=keys)
        )
        return queryset.filter(found), False


admin.site.unregister(Player)


@admin.register(Player)
class PlayerModerationAdmin(PlayerAdmin):
    fields = ("game", "external_id", "display_name", "created_at", "current_ranks", "results_by_board")
    readonly_fields = (*PlayerAdmin.readonly_fields, "current_ranks", "results_by_board")
    actions = ["erase", "revoke_tokens"]

    def has_moderate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("anticheat.moderate_match")

    @admin.action(
        description="Erase selected players (void all their matches; asks for a reason)", permissions=["moderate"]
    )
    def erase(self, request: HttpRequest, queryset: QuerySet[Player]) -> HttpResponse | None:
        form = ReasonForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            voided = 0
            players = list(queryset.select_related("game"))
            for player in players:
                voided += len(
                    player_erase(player=player, reason=form.cleaned_data["reason"], actor=Actor.of_user(request.user))
                )
            self.message_user(request, f"Erased {len(players)} player(s); {voided} match(es) voided.", messages.SUCCESS)
            return None
        return TemplateResponse(
            request,
            "admin/scores/erase_form.html",
            {
                **self.admin_site.each_context(request),
                "title": "Erase players",
                "players": queryset,
                "form": form,
                "opts": self.model._meta,
            },
        )

    @admin.action(description="Revoke selected players' bearer tokens (docs/api.md §3.2)", permissions=["moderate"])
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Player]) -> None:
        revoked = 0
        for player in queryset:
            try:
                player_tokens_revoke(player=player)
            except RedisUnreachable as exc:
                self.message_user(request, f"Stopped after {revoked} player(s): {exc.message}", messages.ERROR)
                return
            revoked += 1
        self.message_user(request, f"Revoked the tokens of {revoked} player(s).", messages.SUCCESS)

    @admin.display(description="current rank per board and window")
    def current_ranks(self, obj: Player) -> str:
        """From Postgres, in the board order (docs/api.md §6): what the boards show once Redis has it."""
        config = game_config(obj.game)
        now = timezone.now()
        rows = []
        for board in config.boards.values():
            cells = []
            for kind in board.windows:
                if kind in windows.ROLLING_WINDOWS:
                    continue  # built from the daily windows, not stored per player
                try:
                    window = windows.resolve(kind, now, board.reset_timezone, board.windows, board.seasons)
                except windows.UnknownWindow:
                    cells.append((kind, "no current window", ""))
                    continue
                found, _ = durable_standings(board, window=window, pks=[obj.pk])
                if obj.pk not in found:
                    cells.append((window, "no score", ""))
                    continue
                encoded, position, better = found[obj.pk]
                rank = better + 1 if board.rank_display == "shared" else position + 1
                cells.append((window, f"#{rank:,}", f"{encoding.decode_value(board, encoded):,}"))
            rows.append(
                format_html(
                    "<tr><th>{}</th><td>{}</td></tr>",
                    board.slug,
                    format_html_join(" · ", "{}: <strong>{}</strong> {}", cells),
                )
            )
        return format_html("<table>{}</table>", format_html_join("", "{}", ((r,) for r in rows)))

    @admin.display(description="results per board, newest first")
    def results_by_board(self, obj: Player) -> str:
        blocks = []
        for board in Board.objects.filter(game_id=obj.game_id).order_by("id"):
            results = list(
                Result.objects.filter(player=obj, board=board)
                .select_related("match__server_key")
                .order_by("-match__ended_at", "-match_id")[: RESULTS_PER_BOARD + 1]
            )
            if not results:
                continue
            rows = format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                (
                    (
                        r.match.ended_at.strftime("%Y-%m-%d %H:%M:%S"),
                        match_link(r.match),
                        f"{r.score:,}",
                        r.match.status if r.match.status != Match.Status.ACCEPTED else "",
                        r.match.server_key.name if r.match.server_key else "-",
                    )
                    for r in results[:RESULTS_PER_BOARD]
                ),
            )
            more = ""
            if len(results) > RESULTS_PER_BOARD:
                url = reverse("admin:scores_match_changelist") + f"?q={obj.external_id}&board={board.pk}"
                more = format_html("<a href='{}'>all of {}'s matches on {} →</a>", url, obj.external_id, board.slug)
            blocks.append(
                format_html(
                    "<h3>{}</h3><table><tr><th>ended (UTC)</th><th>match</th><th>score</th><th>status</th>"
                    "<th>server</th></tr>{}</table>{}",
                    board.slug,
                    rows,
                    more,
                )
            )
        return format_html_join("", "{}", ((b,) for b in blocks)) or "no results"
