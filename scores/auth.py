"""Game-server authentication (docs/api.md §3.1): HMAC-SHA256 signed requests.

A server key's secret is never stored. It is derived from the key id, a random per-key salt
and SERVER_KEY_PEPPER (environment only), so a database dump alone cannot sign requests."""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import re
import secrets
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.db import transaction
from django.http import HttpRequest
from rest_framework import exceptions, status
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from leaderboard_project.errors import ApiError
from scores.models import Player, PlayerTokenGeneration, ServerKey


def server_key_secret(key_id: str, salt: str) -> str:
    mac = hmac.new(settings.SERVER_KEY_PEPPER.encode(), f"server-key:v1:{key_id}:{salt}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


class CredentialStore(Protocol):
    """Where the signatures of minting requests already served and the mirror of the players'
    token generations live: Redis (rediskit/credentials.py, registered by boards/apps.py; the
    durable core never touches Redis itself). None or False: the store is unreachable."""

    def signature_claim(self, key_id: str, v1: str, ttl: int) -> bool | None: ...

    def generations(self, pks: list[int]) -> dict[int, int] | None: ...

    def generations_fill(self, found: dict[int, int], ttl: int) -> None: ...

    def generation_set(self, pk: int, generation: int, ttl: int) -> bool: ...


_store: CredentialStore | None = None


def credential_store_register(store: CredentialStore) -> None:
    """Called from an upper app's AppConfig.ready() (boards/apps.py)."""
    global _store
    _store = store


def credential_store() -> CredentialStore:
    if _store is None:
        raise RuntimeError("no credential store registered (boards/apps.py registers rediskit/credentials.py)")
    return _store


@dataclass(frozen=True)
class ServerPrincipal:
    """request.user for a signed request."""

    key: ServerKey
    is_authenticated: bool = True
    is_staff: bool = False

    @property
    def game_id(self) -> int:
        return self.key.game_id


_SIGNATURE_T = re.compile(r"[0-9]{1,12}")  # unix seconds (12 digits reach year 33658)
_SIGNATURE_V1 = re.compile(r"[0-9a-fA-F]{64}")
_KEY_ID = re.compile(r"[\x21-\x7e]{1,40}")  # what ServerKey.key_id can hold (sk_ + hex)


def _parse_signature(header: str) -> tuple[int, str]:
    parts = dict(p.strip().split("=", 1) for p in header.split(",") if "=" in p)
    t, v1 = parts.get("t", ""), parts.get("v1", "")
    if not _SIGNATURE_T.fullmatch(t) or "v1" not in parts:
        raise exceptions.AuthenticationFailed("X-Signature must look like t=<unix seconds>,v1=<hex>")
    if not _SIGNATURE_V1.fullmatch(v1):
        raise exceptions.AuthenticationFailed("X-Signature v1 must be 64 hex characters")
    return int(t), v1


def _signed_path(request: Request) -> str:
    raw = request.META.get("RAW_URI")  # gunicorn keeps the path exactly as sent
    # a DRF Request, or Django's own (the hot endpoints, leaderboard_project/plain.py)
    return raw if raw else getattr(request, "_request", request).get_full_path()


# --- server keys, cached per process -------------------------------------------------------
#
# Looking a key up in Postgres cost as much as the rest of a signed read. Each process keeps
# the keys it has seen, each with the "generation" that was current in the shared cache when it
# was read from Postgres. Any change to a key (revocation, new scopes) sets a new generation
# after its transaction commits, so the next request in every process reads the key again:
# a revoked key is refused at once, for one cache GET per request instead of a query.
# The TTL bounds how long a change made while Redis was unreachable can go unnoticed.

KEY_CACHE_TTL = 60.0
KEY_CACHE_MAX = 1000
_GENERATION_KEY = "server-keys:generation"
_keys: dict[str, tuple[float, str, ServerKey | None]] = {}


def server_key_get(key_id: str) -> ServerKey | None:
    """The key (with its game) as Postgres has it now, or None if there is no such key."""
    # No generation yet (no key changed since Redis started), or Redis unreachable: "0". A
    # change then sets a random one; a Redis restart drops it back to "0", which differs too.
    generation = cache.get(_GENERATION_KEY) or "0"
    hit = _keys.get(key_id)
    now = time.monotonic()
    if hit is not None and hit[1] == generation and now - hit[0] < KEY_CACHE_TTL:
        return hit[2]
    key = ServerKey.objects.select_related("game").filter(key_id=key_id).first()
    if len(_keys) >= KEY_CACHE_MAX:
        _keys.clear()
    _keys[key_id] = (now, generation, key)
    return key


def server_keys_changed(created: bool = False, **kwargs: object) -> None:
    """Make every process read server keys from Postgres again, once the change is committed.
    A new key needs nothing: its random id cannot have been cached as unknown."""
    if not created:
        transaction.on_commit(lambda: cache.set(_GENERATION_KEY, secrets.token_hex(8), timeout=None))


class ServerKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[ServerPrincipal, ServerKey] | None:
        key_id = request.META.get("HTTP_X_KEY_ID")
        header = request.META.get("HTTP_X_SIGNATURE")
        if not key_id and not header:
            return None
        if not key_id or not header:
            raise exceptions.AuthenticationFailed("send both X-Key-Id and X-Signature")
        t, received = _parse_signature(header)
        if abs(time.time() - t) > settings.SIGNATURE_MAX_SKEW_SECONDS:
            raise exceptions.AuthenticationFailed(
                f"signature timestamp is more than {settings.SIGNATURE_MAX_SKEW_SECONDS} s away from server time"
            )
        key = server_key_get(key_id) if _KEY_ID.fullmatch(key_id) else None
        if key is None:
            raise exceptions.AuthenticationFailed("unknown key id")
        secret = server_key_secret(key.key_id, key.salt)
        message = f"{t}.{request.method}.{_signed_path(request)}.".encode() + request.body
        expected = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, received.lower()):
            raise exceptions.AuthenticationFailed("signature does not match")
        if key.revoked_at is not None:
            raise exceptions.PermissionDenied("this server key has been revoked")
        return ServerPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        return 'HMAC-SHA256 realm="leaderboard"'


_authentication = ServerKeyAuthentication()
_UNSIGNED = "this endpoint needs a signed request (X-Key-Id, X-Signature)"


class RedisUnreachable(ApiError):
    """A write whose safety rests on Redis (the replay check of minting, a token revocation's
    mirror) while Redis is unreachable: refused, nothing changed (docs/api.md §14)."""

    code = "redis_unavailable"

    def __init__(self, message: str) -> None:
        super().__init__(message, status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
        self.wait = 1  # DRF's exception handler answers it as Retry-After


def signature_use_once(request: Request) -> None:
    """Mark a signed request's signature as served; refuse one served before (docs/api.md §3.1,
    "Requests that mint credentials"). For the requests that mint credentials: a captured one
    replayed within its 300 s would otherwise hand its sender a fresh token or login link.

    SET NX in Redis, kept until the signature's timestamp is out of the window anyway. With
    Redis unreachable the request is refused (503): a replay check that silently passes would be
    no check. Call it after everything else that can refuse the request, right before minting,
    so a refused request (an unknown player, say) can be sent again as it was."""
    key = request.auth
    assert isinstance(key, ServerKey), "only for signed requests (ServerKeyAuthentication)"
    t, v1 = _parse_signature(request.META["HTTP_X_SIGNATURE"])
    ttl = max(1, math.ceil(t + settings.SIGNATURE_MAX_SKEW_SECONDS - time.time()) + 1)
    fresh = credential_store().signature_claim(key.key_id, v1, ttl)
    if fresh is None:
        # a replay check that silently passed would be no check
        raise RedisUnreachable("cannot check this signature against replays now; nothing was made, retry")
    if not fresh:
        raise exceptions.AuthenticationFailed(
            "this signature was already used: a request that mints credentials is served once; sign a new one"
        )


def server_key_allowed(key: ServerKey, *, game: str | None, scope: str | None) -> None:
    """Raises PermissionDenied unless `key` belongs to the game of that slug and holds `scope`
    (None: any scope)."""
    if key.game.slug != game:
        raise exceptions.PermissionDenied("this key belongs to another game")
    if scope is not None and scope not in key.scopes:
        raise exceptions.PermissionDenied(f"this key lacks the '{scope}' scope")


def server_key_signed(request: HttpRequest, *, game: str, scope: str | None) -> ServerKey:
    """The key that signed a plain Django request (leaderboard_project.plain's endpoints), if
    it may act on `game` with `scope`; raises as ServerKeyAuthentication and HasServerScope do."""
    authenticated = _authentication.authenticate(request)  # type: ignore[arg-type]
    if authenticated is None:
        raise exceptions.NotAuthenticated(_UNSIGNED)
    key = authenticated[1]
    server_key_allowed(key, game=game, scope=scope)
    return key


def server_key_permission(scope: str | None) -> type[BasePermission]:
    """A permission class: a signed request from a key of the URL's game holding `scope`
    (None: any key of the game, whatever its scopes)."""

    class HasServerScope(BasePermission):
        def has_permission(self, request: Request, view: object) -> bool:
            key = request.auth
            if not isinstance(key, ServerKey):
                raise exceptions.NotAuthenticated(_UNSIGNED)
            server_key_allowed(key, game=view.kwargs.get("game"), scope=scope)
            return True

    HasServerScope.__name__ = f"HasServerScope_{scope or 'any'}"
    return HasServerScope


# --- player bearer tokens (docs/api.md §3.2) ---------------------------------------------

_TOKEN_SALT = "leaderboard.player-token.v1"


def make_player_token(
    game_id: int, player_pk: int, expires_at: datetime, external_id: str | None = None, generation: int = 0
) -> str:
    """A signed, self-contained token: checking it needs no database read. With the player's
    id (`x`), a read of the player's own board pages needs no id lookup either (docs/reads.md,
    "A player's own read"); tokens without it are checked the same way. `generation` (`v`, left out
    while 0): the player's token generation when it was made; revoking raises the player's, and
    an older token is refused (player_token_generations)."""
    data: dict[str, object] = {"g": game_id, "p": player_pk, "e": int(expires_at.timestamp())}
    if external_id is not None:
        data["x"] = external_id
    if generation:
        data["v"] = generation
    return signing.dumps(data, salt=_TOKEN_SALT)


@dataclass(frozen=True)
class PlayerPrincipal:
    """request.user for a player's bearer token (external_id: the player's id, when the token
    carries it; generation: the token's, docs/api.md §3.2)."""

    game_id: int
    player_pk: int
    is_authenticated: bool = True
    is_staff: bool = False
    external_id: str | None = None
    generation: int = 0


# --- revocation: a generation per player -------------------------------------------------
#
# Postgres holds it (PlayerTokenGeneration); Redis mirrors it per player (rediskit/keys.py
# player_tokens_key, through the credential store)
# so that checking it costs one GET, or nothing extra on a player's own read, whose board script reads
# it in the read's own round trip (page.lua, friends.lua). Revoking writes the mirror before its
# transaction commits (services.player_tokens_revoke), so the next request anywhere sees it. A
# missing mirror (never set, expired, Redis emptied) is read from Postgres and set again with
# SET NX, which never lowers a generation a revocation wrote meanwhile. Redis unreachable:
# Postgres answers.


def _generations_durable(pks: list[int]) -> dict[int, int]:
    """Each existing player's generation from Postgres (0 without a row); players that do not
    exist are left out."""
    found = dict.fromkeys(Player.objects.filter(pk__in=pks).values_list("pk", flat=True), 0)
    found.update(PlayerTokenGeneration.objects.filter(player_id__in=found).values_list("player_id", "generation"))
    return found


def player_token_generations(pks: list[int]) -> dict[int, int]:
    """The current token generation of each of these players (one MGET; Postgres for those
    Redis does not hold, or for all when it is unreachable). A player that does not exist is
    left out: its tokens are refused."""
    if not pks:
        return {}
    out = credential_store().generations(pks)
    if out is None:
        return _generations_durable(pks)
    missing = [pk for pk in pks if pk not in out]
    if missing:
        durable = _generations_durable(missing)
        player_token_generations_mirror(durable)
        out.update(durable)
    return out


def player_token_generations_mirror(generations: dict[int, int]) -> None:
    """Mirror these generations (read from Postgres) where Redis holds none; a revocation's
    newer number written meanwhile stays. Redis unreachable: nothing (the readers ask Postgres)."""
    credential_store().generations_fill(generations, settings.PLAYER_TOKEN_TTL_SECONDS)


def player_token_current(principal: PlayerPrincipal) -> bool:
    """Whether the token's player exists and has not revoked tokens of the token's generation."""
    current = player_token_generations([principal.player_pk]).get(principal.player_pk)
    return current is not None and principal.generation >= current


# Checked tokens, per process: a token is immutable, so checking its signature once is enough;
# its expiry is checked on every use. Bounded, emptied whole when full.
_TOKENS_MAX = 20_000
_tokens: dict[str, tuple[int, PlayerPrincipal]] = {}


def player_from_token(token: str, *, check_revoked: bool = True) -> PlayerPrincipal | None:
    """The token's player, or None for a token that is invalid, expired or (unless the caller
    checks that itself: a player's own read, in its board script) revoked."""
    hit = _tokens.get(token)
    if hit is None:
        try:
            data = signing.loads(token, salt=_TOKEN_SALT)
        except signing.BadSignature:
            return None
        if not isinstance(data, dict):
            return None
        external = data.get("x")
        principal = PlayerPrincipal(
            game_id=int(data["g"]),
            player_pk=int(data["p"]),
            external_id=external if isinstance(external, str) else None,
            generation=int(data.get("v", 0)),
        )
        hit = (int(data.get("e", 0)), principal)
        if len(_tokens) >= _TOKENS_MAX:
            _tokens.clear()
        _tokens[token] = hit
    if hit[0] < time.time():
        return None
    if check_revoked and not player_token_current(hit[1]):
        return None
    return hit[1]


TOKEN_REFUSED = "the bearer token is invalid, expired or revoked"


class PlayerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request, *, check_revoked: bool = True) -> tuple[PlayerPrincipal, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "):
            return None
        token = header[len("Bearer ") :].strip()
        principal = player_from_token(token, check_revoked=check_revoked)
        if principal is None:
            raise exceptions.AuthenticationFailed(TOKEN_REFUSED)
        return principal, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="leaderboard"'


_player_authentication = PlayerTokenAuthentication()


def reader_authenticated(request: HttpRequest, *, check_revoked: bool = True) -> tuple[Any, Any]:
    """(user, auth) of a plain Django request to a read that a server key, a player token or a
    signed-in user may make, tried in that order as DRF tries ServerKeyAuthentication,
    PlayerTokenAuthentication and SessionAuthentication: (None, None) when none applies.
    Raises AuthenticationFailed (401) for credentials that fail. `check_revoked=False` leaves a
    player token's revocation to the caller (the board script checks it in the read's own round
    trip: boards/api/players.py)."""
    signed = _authentication.authenticate(request)  # type: ignore[arg-type]
    if signed is not None:
        return signed
    token = _player_authentication.authenticate(request, check_revoked=check_revoked)  # type: ignore[arg-type]
    if token is not None:
        return token
    user = getattr(request, "user", None)  # Django's session (leaderboard_project/middleware.py)
    if user is not None and user.is_active:
        return user, None  # a safe method: SessionAuthentication's CSRF check passes it
    return None, None
