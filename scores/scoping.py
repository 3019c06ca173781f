"""Per-game scoping of the admin (docs/moderation.md, "Moderators per game"): one queryset rule
every admin page, filter, form and action goes through, so a moderator of one game never sees
nor changes another game's rows.

- Each model the admin shows says once how its rows reach their game: `game_path`, a class
  attribute naming the lookup ("game", "board__game"; "" for Game itself).
- `game_scope(queryset, user=...)` keeps the rows of the games the user moderates; a superuser's
  queryset is left as it is. Which games those are is the moderation app's to say
  (anticheat.selectors.games_moderated_by, registered from its AppConfig.ready(): this app
  imports no other, docs/architecture.md); with nothing registered, a non-superuser has none.
- `GameScopedAdmin` applies it to everything Django's admin reads through `get_queryset`
  (changelists, search, autocomplete, actions, object pages: another game's object is a 404),
  to the per-object permissions, to foreign-key choices in forms and to list filters' choices.
  Custom views and filters of a page call `game_scope` themselves.

A queryset rule rather than an object-permission library (django-guardian's per-object rows):
the unit of access is the game, not the row, and a rule that filters by game is one indexed
condition on tables of millions of matches, where per-row grants would be a join per row and a
write per new row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import QuerySet
from django.http import Http404, HttpRequest

from scores.models import Game

M = TypeVar("M", bound=models.Model)
GamesOf = Callable[[Any], QuerySet[Game]]
_games_of: list[GamesOf] = []
_CACHE = "_moderated_game_ids"  # on the request's user object: one read per request


def moderated_games_register(games_of: GamesOf) -> None:
    """Called once by the app that records who moderates which game."""
    _games_of[:] = [games_of]


def game_ids_for(user: Any) -> frozenset[int] | None:
    """The ids of the games `user` may see in the admin; None for every game (a superuser)."""
    if not getattr(user, "is_active", False):
        return frozenset()
    if user.is_superuser:
        return None
    cached = getattr(user, _CACHE, None)
    if cached is None:
        cached = frozenset(_games_of[0](user).values_list("pk", flat=True)) if _games_of else frozenset()
        setattr(user, _CACHE, cached)
    return cached


def game_path_of(model: type[models.Model]) -> str:
    path = getattr(model, "game_path", None)
    if path is None:
        raise ImproperlyConfigured(f"{model.__name__} has no game_path: the admin cannot tell its game")
    return path


def has_game_path(model: type[models.Model]) -> bool:
    return getattr(model, "game_path", None) is not None


def game_scope(queryset: QuerySet[M], *, user: Any) -> QuerySet[M]:
    """The rows of `queryset` in the games `user` moderates (all of them for a superuser)."""
    ids = game_ids_for(user)
    if ids is None:
        return queryset
    path = game_path_of(queryset.model)
    return queryset.filter(**{f"{path}__in" if path else "pk__in": sorted(ids)})


def game_id_of(obj: models.Model) -> int | None:
    """The id of the game an object belongs to, following its model's game_path."""
    path = game_path_of(type(obj))
    if not path:
        return obj.pk
    *through, last = path.split("__")
    target: Any = obj
    for name in through:
        target = getattr(target, name, None)
        if target is None:
            return None
    return getattr(target, f"{last}_id", None)


def in_scope(obj: models.Model | None, *, user: Any) -> bool:
    ids = game_ids_for(user)
    return obj is None or ids is None or game_id_of(obj) in ids


class ScopedRelatedFieldListFilter(admin.RelatedFieldListFilter):
    """A list filter on a relation (game, board, ...) offers only the user's games' rows."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> Any:
        remote = field.remote_field.model
        if not has_game_path(remote) or game_ids_for(request.user) is None:
            return super().field_choices(field, request, model_admin)
        ordering = self.field_admin_ordering(field, request, model_admin)
        allowed = game_scope(remote._default_manager.all(), user=request.user).values("pk")
        return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to={"pk__in": allowed})


class GameScopedAdmin(admin.ModelAdmin):
    """The base of every admin page of a game's rows (scores, seasons, competitions, anticheat)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return game_scope(super().get_queryset(request), user=request.user)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # another game's object and no object at all answer the same: 404, which tells nothing
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404("no such object")
        return obj

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) and in_scope(obj, user=request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and in_scope(obj, user=request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and in_scope(obj, user=request.user)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field: Any = super().formfield_for_foreignkey(db_field, request, **kwargs)
        queryset = getattr(field, "queryset", None)
        if queryset is not None and has_game_path(queryset.model):
            field.queryset = game_scope(queryset, user=request.user)
        return field

    def get_list_filter(self, request: HttpRequest) -> Any:
        return [self._scoped_filter(spec) for spec in super().get_list_filter(request)]

    def _scoped_filter(self, spec: Any) -> Any:
        if not isinstance(spec, str):
            return spec  # a filter class of its own scopes its choices itself
        field = get_fields_from_path(self.model, spec)[-1]
        if field.is_relation and field.related_model is not None and has_game_path(field.related_model):
            return (spec, ScopedRelatedFieldListFilter)
        return spec
