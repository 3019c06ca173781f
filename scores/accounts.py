"""Site logins for players (scores.PlayerAccount): one-time login links made by a game's
server, and the demo players' accounts. See docs/players.md.

A login link is a signed, self-contained token (game, player, a random nonce, expiry): making
one writes nothing. Redeeming inserts the nonce into scores.LoginLinkUse, whose primary key
makes a second redemption fail inside the database, so two browsers racing with the same
link cannot both sign in. Everything a redemption writes is in one transaction: a refused
redemption (used, expired, a conflicting account, a staff account) changes nothing.

A login link is for players only (docs/players.md, "One-time login links"): it never signs
anyone in as a staff or superuser account, and never links one to a player. A game's server
key can mint links for any of its players; if a link could reach a staff account, that key
would open the admin.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.hashers import make_password
from django.core import signing
from django.db import IntegrityError, connection, transaction

from scores.models import LoginLinkUse, Player, PlayerAccount

_LINK_SALT = "leaderboard.login-link.v1"
DEMO_PASSWORD = "demo"


class LoginLinkError(Exception):
    """A link that cannot be redeemed; `code` names why (invalid, expired, used, conflict, staff)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class LoginLink:
    """A one-time sign-in link's token (signed, so the link needs no table until it is used)."""

    token: str
    expires_at: datetime


@dataclass(frozen=True)
class LinkTarget:
    """What a valid, unexpired token names (not yet known to be unused)."""

    game_id: int
    player_pk: int
    nonce: str
    expires_at: datetime


def login_link_create(*, player: Player, ttl_seconds: int | None = None) -> LoginLink:
    ttl = settings.LOGIN_LINK_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    expires = int(time.time()) + ttl
    payload = {"g": player.game_id, "p": player.pk, "n": uuid.uuid4().hex, "e": expires}
    token = signing.dumps(payload, salt=_LINK_SALT, compress=False)
    return LoginLink(token=token, expires_at=datetime.fromtimestamp(expires, UTC))


def login_link_read(token: str) -> LinkTarget:
    """Check a token's signature and expiry (not whether it was used: only redeeming can
    know that for sure)."""
    try:
        data = signing.loads(token, salt=_LINK_SALT)
        target = LinkTarget(int(data["g"]), int(data["p"]), str(data["n"]), datetime.fromtimestamp(data["e"], UTC))
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise LoginLinkError("invalid", "This sign-in link is not valid. Ask the game for a new one.") from None
    if target.expires_at.timestamp() <= time.time():
        raise LoginLinkError("expired", "This sign-in link has expired. Ask the game for a new one.")
    return target


STAFF_SIGNED_IN = (
    "You are signed in with a staff account, which a login link never links to a player. "
    "Sign out, then open the link again to continue as the player."
)
STAFF_LINKED = (
    "This player is linked to a staff account, and a login link never signs anyone in as staff. "
    "Ask the game's operators to unlink it."
)


def is_staff_account(user: AbstractBaseUser) -> bool:
    """Staff or superuser: an account no login link may sign in or link to a player."""
    return bool(getattr(user, "is_staff", False) or getattr(user, "is_superuser", False))


def login_link_redeem(*, token: str, user: AbstractBaseUser | None) -> tuple[AbstractBaseUser, Player]:
    """Use a link once. Signed in (`user`): link that user to the player. Signed out: the
    player's user, created if the player has none. Returns the user to sign in and the player.
    Refused (`staff`) when either is a staff or superuser account."""
    target = login_link_read(token)
    player = Player.objects.select_related("game").filter(pk=target.player_pk, game_id=target.game_id).first()
    if player is None:
        raise LoginLinkError("invalid", "The player this link was made for no longer exists.")
    signed_in = user if user is not None and user.is_authenticated else None
    if signed_in is not None and is_staff_account(signed_in):
        raise LoginLinkError("staff", STAFF_SIGNED_IN)
    with transaction.atomic():
        account_user = signed_in or _player_user(player)
        if signed_in is not None:
            _account_link(signed_in, player)
        try:
            with transaction.atomic():
                LoginLinkUse.objects.create(nonce=target.nonce, player=player, user=account_user)
        except IntegrityError:
            raise LoginLinkError(
                "used", "This sign-in link has already been used. Ask the game for a new one."
            ) from None
    return account_user, player


def _player_user(player: Player) -> AbstractBaseUser:
    """The user who plays as `player`, created (without a usable password) if none does; never
    a staff or superuser account (a link made before such links were refused, or an account
    promoted since: refused). Two redemptions racing for a new player: the loser's insert fails
    on a unique constraint and it reads the winner's row."""
    found = PlayerAccount.objects.select_related("user").filter(player=player).first()
    if found is not None:
        return _not_staff(found.user)
    User = get_user_model()
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=f"{player.game.slug}:{player.external_id}"[:150])
            user.set_unusable_password()
            user.save(update_fields=["password"])
            PlayerAccount.objects.create(user=user, game_id=player.game_id, player=player)
            return user
    except IntegrityError:
        found = PlayerAccount.objects.select_related("user").filter(player=player).first()
        if found is None:  # the username is taken by someone who does not play as this player
            raise LoginLinkError("conflict", "Another account already uses this player's name.") from None
        return _not_staff(found.user)


def _not_staff(user: AbstractBaseUser) -> AbstractBaseUser:
    if is_staff_account(user):
        raise LoginLinkError("staff", STAFF_LINKED)
    return user


def _account_link(user: AbstractBaseUser, player: Player) -> None:
    existing = (
        PlayerAccount.objects.filter(user=user, game_id=player.game_id).values_list("player_id", flat=True).first()
    )
    if existing == player.pk:
        return
    if existing is not None:
        raise LoginLinkError("conflict", "Your account already plays as another player in this game.")
    try:
        with transaction.atomic():
            PlayerAccount.objects.create(user=user, game_id=player.game_id, player=player)
    except IntegrityError:
        raise LoginLinkError("conflict", "This player is already linked to another account.") from None


# --- demo accounts ----------------------------------------------------------------------------


def demo_accounts_create(*, game_id: int, password: str = DEMO_PASSWORD) -> int:
    """A login for every player of the demo game: username = player id, one shared password.

    Set-based (two INSERT ... SELECT) with the password hashed once: 100k accounts take
    seconds, mostly index upkeep. Idempotent: existing usernames and accounts are left alone. Returns how
    many accounts were made."""
    hashed = make_password(password)
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,
                                   is_staff, is_active, date_joined)
            SELECT %s, false, p.external_id, '', '', '', false, true, now()
            FROM scores_player p
            WHERE p.game_id = %s
            ON CONFLICT (username) DO NOTHING
            """,
            [hashed, game_id],
        )
        # only users made above (they carry this call's hash): never an unrelated user of the same name
        cur.execute(
            """
            INSERT INTO scores_playeraccount (user_id, game_id, player_id, created_at)
            SELECT u.id, p.game_id, p.id, now()
            FROM scores_player p JOIN auth_user u ON u.username = p.external_id
            WHERE p.game_id = %s AND u.password = %s
            ON CONFLICT DO NOTHING
            """,
            [game_id, hashed],
        )
        return cur.rowcount


def demo_accounts_missing(*, game_id: int) -> bool:
    """Whether the demo game has players but none of them has a login (data loaded before
    demo accounts existed)."""
    return (
        Player.objects.filter(game_id=game_id).exists() and not PlayerAccount.objects.filter(game_id=game_id).exists()
    )


# --- hints on the login page ------------------------------------------------------------------


@dataclass(frozen=True)
class LoginHint:
    """A line of help on the login page, e.g. the demo's logins (registered by demo/apps.py)."""

    anchor: str  # the section's HTML id
    title: str
    detail: str
    username: str
    password: str


_login_hints: dict[str, Callable[[], LoginHint | None]] = {}


def login_hint_register(uid: str, hint: Callable[[], LoginHint | None]) -> None:
    """Register a callable giving a hint for the login page (None: nothing to say now). Upper
    apps call this from AppConfig.ready(), so the pages never import them; `uid` makes a
    second registration (a reloaded app) replace the first."""
    _login_hints[uid] = hint


def login_hints() -> list[LoginHint]:
    return [h for h in (hint() for hint in _login_hints.values()) if h is not None]
