from django.contrib import admin
from django.http import HttpRequest

from scores.models import Board, Game, Match, Player, PlayerAccount, Result, Season, ServerKey
from scores.scoping import GameScopedAdmin


class ReadOnlyAdminMixin:
    """A record nobody adds, changes or deletes in the admin (superusers included): actions and
    services write it. Its pages are view-only, with no Save buttons."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class BoardInline(admin.TabularInline):
    model = Board
    extra = 0
    fields = ("slug", "name", "order", "mode", "windows", "min_score", "max_score", "max_total", "rank_display")


class SeasonInline(admin.TabularInline):
    model = Season
    extra = 0


@admin.register(Game)
class GameAdmin(GameScopedAdmin):
    list_display = ("slug", "name", "reset_timezone", "created_at")
    search_fields = ("slug", "name")
    inlines = [BoardInline, SeasonInline]


@admin.register(ServerKey)
class ServerKeyAdmin(GameScopedAdmin):
    """Keys are created with `create_server_key` (the secret is shown once, there); here they
    are listed (anticheat/admin/keys.py adds the revoke action, which audits it)."""

    list_display = ("key_id", "name", "game", "scopes", "created_at", "revoked_at")
    list_filter = ("game", "revoked_at")
    search_fields = ("key_id", "name")
    readonly_fields = ("game", "key_id", "created_at", "revoked_at", "scopes")
    exclude = ("salt",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class ResultInline(admin.TabularInline):
    model = Result
    extra = 0
    can_delete = False
    readonly_fields = ("player", "board", "score", "metadata")

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Match)
class MatchAdmin(GameScopedAdmin):
    list_display = ("match_id", "game", "status", "ended_at", "received_at", "server_key")
    list_filter = ("game", "status")
    search_fields = ("match_id",)
    date_hierarchy = "ended_at"
    readonly_fields = ("game", "match_id", "ended_at", "body_hash", "status", "server_key", "received_at")
    inlines = [ResultInline]
    list_select_related = ("game", "server_key")
    show_full_result_count = False  # a COUNT(*) over millions of matches on every page is not worth it

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # matches are voided (moderation), never deleted


@admin.register(Player)
class PlayerAdmin(GameScopedAdmin):
    """Players are never deleted here (their results, values and frozen standings would go
    with them, behind the boards' back): anticheat/admin adds the erase action, which voids
    their matches instead."""

    list_display = ("external_id", "display_name", "game", "created_at")
    list_filter = ("game",)
    search_fields = ("external_id", "display_name")
    readonly_fields = ("game", "external_id", "created_at")
    show_full_result_count = False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(PlayerAccount)
class PlayerAccountAdmin(GameScopedAdmin):
    """Which site login plays as which player (made by demo data or one-time login links)."""

    list_display = ("user", "player", "game", "created_at")
    list_filter = ("game",)
    search_fields = ("user__username", "player__external_id")
    raw_id_fields = ("user", "player")
    list_select_related = ("user", "player", "game")
