"""Moderators per game (docs/moderation.md, "Moderators per game"), walked over the admin registry:
every registered page, its search, filters, object pages, actions and autocomplete, as a
moderator of one game with another game's rows present. The pages come from
`admin.site._registry`, so a page registered later is walked without a new test; its rows must
be in the `two_games` world (the test says so when they are not).

Both games are built the same way and every row of the second one carries its name, "brawl"
(players, matches, keys, windows, webhook URLs, its moderator): a page that shows the arena's
moderator anything of brawl has "brawl" in it. Each check is made the other way round too, as
brawl's moderator, who must see brawl's rows, so none of them passes on an empty page."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.test import Client, RequestFactory
from django.urls import reverse

from anticheat.models import AuditEntry, GameModerator, MatchFlag
from anticheat.services import Actor, match_approve, moderator_grant, moderator_revoke
from competitions.models import TournamentEntry, WebhookDelivery
from scores.models import Board, Game, Match, Player, PlayerAccount, PlayerValue, Result, ServerKey
from scores.scoping import GameScopedAdmin, game_path_of
from scores.selectors import cached_board
from seasons.models import WindowClose, WindowFreeze
from seasons.services import window_freeze
from tests.anticheat.conftest import moderators_group_create
from tests.conftest import SignedClient
from tests.factories import RULES_OFF, BoardFactory, GameFactory, SeasonFactory, server_key

PAGES: dict[type[models.Model], admin.ModelAdmin] = dict(admin.site._registry)
# Django's own site accounts belong to no game: only a superuser manages them
SITE_ACCOUNTS = {User, Group}
# pages no moderator opens, whatever their permissions
SUPERUSERS_ONLY = {GameModerator}
SCOPED = sorted((m for m in PAGES if m not in SITE_ACCOUNTS), key=lambda m: m._meta.label)
# the rows whose change an action would be: every page's table and what moderation writes
WATCHED = sorted({m._meta.concrete_model for m in SCOPED} | {Result, MatchFlag}, key=lambda m: m._meta.label)
DAY = "2026-11-28"


def label(model: type[models.Model]) -> str:
    return model._meta.label_lower


@dataclass
class World:
    games: dict[str, Game]
    mods: dict[str, User]
    root: User
    clients: dict[str, Client] = dataclasses.field(default_factory=dict)

    def client(self, who: str) -> Client:
        """One signed-in client per person for the test (a sign-in writes a session: the
        autocomplete walk asks hundreds of times)."""
        if who not in self.clients:
            self.clients[who] = Client()
            self.clients[who].force_login(self.root if who == "root" else self.mods[who])
        return self.clients[who]


def _game(slug: str) -> Game:
    """A game with everything the admin shows: a key, players, accepted and held matches (the
    review queue, the audit log), an approval by its moderator, a frozen window (freeze, close,
    webhook delivery), a tournament entry, a site account playing as a player."""
    game = GameFactory(slug=slug, webhooks=[{"url": f"https://{slug}.example/hook", "events": ["window.frozen"]}])
    BoardFactory(game=game, slug="rating", anticheat={"max_matches_per_minute": 50})  # holds on a jump
    BoardFactory(game=game, slug="free", anticheat=dict(RULES_OFF))
    SeasonFactory(game=game, slug="s1")
    key, secret = server_key(game, scopes=("submit",), name=f"{slug}-eu")
    gs = SignedClient(key.key_id, secret)
    url = f"/api/v1/games/{slug}/matches"

    def submit(match_id: str, player: str, board: str, score: int) -> str:
        body = {"match_id": f"{slug}-{match_id}", "ended_at": f"{DAY}T12:00:00Z",
                "results": [{"player": f"{slug}-{player}", "board": board, "score": score,
                             "display_name": f"{slug.title()} {player}"}]}  # fmt: skip
        response = gs.post(url, body)
        assert response.status_code in (200, 201), response.content
        return response.json()["status"]

    assert submit("m1", "ana", "free", 500) == "accepted"
    assert submit("m2", "bo", "rating", 100) == "accepted"
    assert submit("h1", "bo", "rating", 9000) == "held"
    assert submit("h2", "bo", "rating", 9500) == "held"
    window_freeze(board=cached_board(slug, board_slug="free"), window=f"daily:{DAY}", reason="window closed")
    ana = Player.objects.get(game=game, external_id=f"{slug}-ana")
    PlayerAccount.objects.create(user=User.objects.create_user(f"{slug}-ana-login"), game=game, player=ana)
    TournamentEntry.objects.create(board=Board.objects.get(game=game, slug="free"), player=ana)
    return game


def _moderator(slug: str) -> User:
    """A moderator of `slug` with every permission the scoped pages know (the scoping, not a
    missing permission, is what hides the other game)."""
    user = moderator_grant(username=f"{slug}-mod", games=[slug], password="pw")[0].user
    types = ContentType.objects.get_for_models(*SCOPED, for_concrete_models=False).values()
    user.user_permissions.add(*Permission.objects.filter(content_type__in=types))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def two_games(transactional_db) -> World:
    moderators_group_create()
    games = {slug: _game(slug) for slug in ("arena", "brawl")}
    mods = {slug: _moderator(slug) for slug in games}
    for slug, user in mods.items():  # an audit entry by each game's own moderator (the actor filter)
        match_approve(match=Match.objects.get(match_id=f"{slug}-h1"), actor=Actor.of_user(user))
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    return World(games=games, mods=mods, root=root)


def _request(user: User) -> Any:
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def _in_game(model: type[models.Model], game: Game) -> dict[str, Any]:
    path = game_path_of(model)
    return {f"{path}__in" if path else "pk__in": [game.pk]}


def rows(world: World, model: type[models.Model], slug: str) -> set[Any]:
    """The pks of `slug`'s rows on the page, as a superuser's page has them."""
    queryset = PAGES[model].get_queryset(_request(world.root))
    return set(queryset.filter(**_in_game(model, world.games[slug])).values_list("pk", flat=True))


def brawl_snapshot(world: World) -> dict[str, set[str]]:
    """Every row of brawl's that an action could change, field by field."""
    game = world.games["brawl"]
    snapshot = {
        label(m): {repr(sorted(r.items())) for r in m._default_manager.filter(**_in_game(m, game)).values()}
        for m in WATCHED
    }
    snapshot["values"] = {repr(sorted(r.items())) for r in PlayerValue.objects.filter(board__game=game).values()}
    snapshot["users"] = {repr((u.username, u.is_active, u.is_staff, u.is_superuser)) for u in User.objects.all()}
    return snapshot


def shown(response: Any) -> set[Any]:
    assert response.status_code == 200, response.status_code
    return {obj.pk for obj in response.context["cl"].result_list}


def filter_choices(response: Any) -> list[tuple[str, str]]:
    """(display, query string) of every list filter's choices on a changelist."""
    cl = response.context["cl"]
    return [
        (str(choice.get("display", "")), choice.get("query_string", ""))
        for spec in cl.filter_specs
        for choice in spec.choices(cl)
    ]


def search_terms(model: type[models.Model], pk: Any) -> set[str]:
    """What the page's search fields hold for this row: the words that would find it."""
    obj = model._default_manager.get(pk=pk)
    terms = set()
    for field in PAGES[model].search_fields:
        value: Any = obj
        for part in field.lstrip("^=@").split("__"):
            value = getattr(value, part, None)
        if value not in (None, ""):
            terms.add(str(value))
    return terms


def autocomplete_sources(model: type[models.Model]) -> list[tuple[type[models.Model], str]]:
    """(model, field) pairs whose foreign key points at `model`: what an autocomplete widget
    for it would ask the admin with."""
    return [
        (source, field.name)
        for source in apps.get_models()
        for field in source._meta.get_fields()
        if field.many_to_one and field.concrete and field.related_model is model
    ]


def test_every_page_but_the_site_accounts_is_scoped_by_game() -> None:
    assert {m for m, page in PAGES.items() if not isinstance(page, GameScopedAdmin)} == SITE_ACCOUNTS
    for model in SCOPED:
        game_path_of(model)  # declared on the model: raises if not


@pytest.mark.parametrize("model", SCOPED, ids=label)
def test_a_moderator_sees_searches_and_filters_only_their_games_rows(two_games: World, model) -> None:
    world, page = two_games, PAGES[model]
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    mine, theirs = rows(world, model, "arena"), rows(world, model, "brawl")
    assert mine and theirs, f"the two_games world has no rows of {label(model)} in each game: add them"
    arena, brawl, root = world.client("arena"), world.client("brawl"), world.client("root")
    assert shown(root.get(url)) >= mine | theirs

    if model in SUPERUSERS_ONLY:
        assert arena.get(url).status_code == brawl.get(url).status_code == 403
        return

    listed = arena.get(url)
    assert shown(listed) >= mine and not shown(listed) & theirs
    assert b"brawl" not in listed.content.lower()
    assert shown(brawl.get(url)) >= theirs and not shown(brawl.get(url)) & mine

    # the search: what finds brawl's rows for a superuser finds none of them for arena's moderator
    found_by_root = {t for pk in theirs for t in search_terms(model, pk) if shown(root.get(url, {"q": t})) & theirs}
    assert found_by_root or not page.search_fields, f"no search term finds brawl's {label(model)}"
    for term in found_by_root:
        assert not shown(arena.get(url, {"q": term})) & theirs, term
        assert shown(brawl.get(url, {"q": term})) & theirs, term

    # the filters: no choice names the other game, and a choice of brawl's (forged into the query
    # string) selects none of its rows for arena's moderator, and selects them for brawl's
    assert not [d for d, _ in filter_choices(listed) if "brawl" in d.lower()]
    assert not [d for d, _ in filter_choices(brawl.get(url)) if "arena" in d.lower()]
    for display, query in filter_choices(root.get(url)):
        if not query or query == "?":
            continue
        response = arena.get(url + query)
        if response.status_code == 302:  # the admin's answer to a lookup it refuses (?e=1)
            continue
        assert not shown(response) & theirs, (display, query)
        if shown(root.get(url + query)) & theirs:
            assert shown(brawl.get(url + query)) & theirs, (display, query)


@pytest.mark.parametrize("model", SCOPED, ids=label)
def test_another_games_object_pages_are_404_or_403(two_games: World, model) -> None:
    world = two_games
    name = f"admin:{model._meta.app_label}_{model._meta.model_name}"
    arena, brawl = world.client("arena"), world.client("brawl")
    for pk in rows(world, model, "brawl"):
        for view in ("change", "delete", "history"):
            url = reverse(f"{name}_{view}", args=[pk])
            assert arena.get(url).status_code in (403, 404), url
            assert arena.post(url, {"post": "yes", "display_name": "x"}).status_code in (403, 404), url
        own = brawl.get(reverse(f"{name}_change", args=[pk]))
        assert own.status_code == (403 if model in SUPERUSERS_ONLY else 200)
        assert world.client("root").get(reverse(f"{name}_change", args=[pk])).status_code == 200


def _actions() -> list[tuple[type[models.Model], str]]:
    return [(m, name) for m in SCOPED for _, name, _ in PAGES[m]._get_base_actions()]


@pytest.mark.parametrize("model,action", _actions(), ids=lambda v: v if isinstance(v, str) else label(v))
def test_every_action_posted_with_another_games_ids_changes_nothing(two_games: World, model, action) -> None:
    world = two_games
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    theirs = sorted(rows(world, model, "brawl"))
    # everything an action's own form asks for (erase: apply and a reason; delete: post=yes)
    form = {"action": action, "_selected_action": theirs, "index": "0", "apply": "1", "post": "yes",
            "reason": "forged", "confirm": "1"}  # fmt: skip
    before = brawl_snapshot(world)
    arena = world.client("arena")
    for select_across in ("0", "1"):
        response = arena.post(url, {**form, "select_across": select_across}, follow=True)
        assert response.status_code in (200, 403, 404)
        assert b"brawl" not in response.content.lower()
        assert brawl_snapshot(world) == before, f"{action} (select_across={select_across}) changed brawl's rows"

    # the same request by brawl's moderator reaches brawl's rows: it changes them or shows them
    if action in PAGES[model].get_actions(_request(world.mods["brawl"])):
        response = world.client("brawl").post(url, {**form, "select_across": "0"}, follow=True)
        assert brawl_snapshot(world) != before or b"brawl" in response.content.lower(), action


@pytest.mark.parametrize("model", [m for m in SCOPED if PAGES[m].search_fields and autocomplete_sources(m)], ids=label)
def test_autocomplete_offers_only_the_moderators_games(two_games: World, model) -> None:
    world = two_games
    theirs = rows(world, model, "brawl")
    for source, field in autocomplete_sources(model):
        for term in {t for pk in theirs for t in search_terms(model, pk)}:
            params = {"app_label": source._meta.app_label, "model_name": source._meta.model_name,
                      "field_name": field, "term": term}  # fmt: skip

            def found(who: str, params: dict[str, str] = params) -> set[str]:
                response = world.client(who).get("/admin/autocomplete/", params)
                assert response.status_code in (200, 403), response.status_code
                return {r["id"] for r in response.json()["results"]} if response.status_code == 200 else set()

            brawl_ids = {str(pk) for pk in theirs}
            if found("root") & brawl_ids:
                assert not found("arena") & brawl_ids, (source, field, term)
                if model not in SUPERUSERS_ONLY:
                    assert found("brawl") & brawl_ids, (source, field, term)


def test_a_staff_user_with_no_game_sees_no_row(two_games: World) -> None:
    """A non-superuser's scope is what was granted: nothing granted, nothing shown."""
    moderator_grant(username="idle", games=["arena"], password="pw")
    moderator_revoke(username="idle", games=["arena"])
    idle = User.objects.get(username="idle")
    idle.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client = Client()
    client.force_login(idle)
    for model in (Match, Player, AuditEntry, WindowFreeze, WindowClose, WebhookDelivery, ServerKey, Game):
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert shown(client.get(url)) == set(), url


# --- the pages' own views (void, bulk void, approve, export): each named here ------------------


def test_the_custom_admin_views_are_the_ones_tested_here() -> None:
    """A page's own URLs (beyond add, change, delete, history) are checked one by one below; a new
    one fails here until it is."""
    standard = ("_changelist", "_add", "_change", "_delete", "_history")
    custom = {p.name for page in PAGES.values() for p in page.get_urls() if p.name and not p.name.endswith(standard)}
    assert custom == {
        "scores_match_void",
        "scores_match_bulk_void",
        "scores_match_approve",
        "anticheat_reviewmatch_void",
        "anticheat_reviewmatch_bulk_void",
        "anticheat_reviewmatch_approve",
        "seasons_windowfreeze_export",
    }


@pytest.mark.parametrize("base", ["/admin/scores/match/", "/admin/anticheat/reviewmatch/"])
def test_void_approve_and_bulk_void_of_another_game_change_nothing(two_games: World, base: str) -> None:
    world = two_games
    arena, brawl = world.client("arena"), world.client("brawl")
    held = Match.objects.get(match_id="brawl-h2")
    before = brawl_snapshot(world)

    preview = arena.get(f"{base}void/", {"ids": str(held.pk)}, follow=True)
    assert b"brawl" not in preview.content.lower()
    arena.post(f"{base}void/?ids={held.pk}", {"confirm": "1", "token": "forged", "reason": "x"})
    arena.post(f"{base}{held.pk}/approve/")
    bulk = {"game": world.games["brawl"].pk, "player": "brawl-bo", "since": "2026-11-01 00:00",
            "until": "2026-12-01 00:00", "reason": "forged"}  # fmt: skip
    form = arena.post(f"{base}bulk-void/", bulk)
    assert form.status_code == 200 and "game" in form.context["form"].errors
    assert b"brawl" not in arena.get(f"{base}bulk-void/").content.lower()  # not among the games offered
    assert brawl_snapshot(world) == before

    # brawl's moderator gets the preview of the same match, and approves it
    assert b"brawl-h2" in brawl.get(f"{base}void/", {"ids": str(held.pk)}).content
    assert brawl.post(f"{base}bulk-void/", bulk).context["preview"] is not None
    brawl.post(f"{base}{held.pk}/approve/")
    assert Match.objects.get(pk=held.pk).status == "accepted"


def test_export_offers_and_exports_only_the_moderators_boards(two_games: World) -> None:
    world = two_games
    url = reverse("admin:seasons_windowfreeze_export")
    board = cached_board("brawl", board_slug="free").id
    arena, brawl = world.client("arena"), world.client("brawl")
    assert b"brawl" not in arena.get(url).content.lower()
    refused = arena.get(url, {"board": board, "window": f"daily:{DAY}"})
    assert refused.status_code == 200 and "board" in refused.context["form"].errors
    exported = brawl.get(url, {"board": board, "window": f"daily:{DAY}"})
    assert exported["Content-Type"].startswith("text/csv")
    assert b"brawl-ana" in b"".join(exported.streaming_content if exported.streaming else [exported.content])


def test_a_form_refuses_another_games_row_as_a_choice(two_games: World) -> None:
    """Foreign-key choices in change forms are the user's games' rows: a site account cannot be
    pointed at brawl's player by arena's moderator, even by id (a raw-id field)."""
    world = two_games
    account = PlayerAccount.objects.get(game=world.games["arena"])
    url = reverse("admin:scores_playeraccount_change", args=[account.pk])
    arena = world.client("arena")
    form = {"user": account.user_id, "game": world.games["arena"].pk}
    theirs = Player.objects.get(external_id="brawl-bo")
    refused = arena.post(url, {**form, "player": theirs.pk})
    assert refused.status_code == 200 and "player" in refused.context["adminform"].form.errors
    assert PlayerAccount.objects.get(pk=account.pk).player.external_id == "arena-ana"
    # the same form with one of arena's players is saved
    assert arena.post(url, {**form, "player": Player.objects.get(external_id="arena-bo").pk}).status_code == 302
    assert PlayerAccount.objects.get(pk=account.pk).player.external_id == "arena-bo"
