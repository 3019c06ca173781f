"""Game-server authentication (docs/api.md §3.1): HMAC-SHA256 signed requests.

A server key's secret is never stored. It is derived from the key id, a random per-key salt
and SERVER_KEY_PEPPER (environment only), so a database dump alone cannot sign requests."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.db import transaction
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from scores.models import ServerKey


def server_key_secret(key_id: str, salt: str) -> str:
    mac = hmac.new(settings.SERVER_KEY_PEPPER.encode(), f"server-key:v1:{key_id}:{salt}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


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
    # a DRF Request, or Django's own (the thin submission path, scores/api/matches.py)
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


def server_key_permission(scope: str | None) -> type[BasePermission]:
    """A permission class: a signed request from a key of the URL's game holding `scope`
    (None: any key of the game, whatever its scopes)."""

    class HasServerScope(BasePermission):
        def has_permission(self, request: Request, view: object) -> bool:
            key = request.auth
            if not isinstance(key, ServerKey):
                raise exceptions.NotAuthenticated("this endpoint needs a signed request (X-Key-Id, X-Signature)")
            if key.game.slug != view.kwargs.get("game"):
                raise exceptions.PermissionDenied("this key belongs to another game")
            if scope is not None and scope not in key.scopes:
                raise exceptions.PermissionDenied(f"this key lacks the '{scope}' scope")
            return True

    HasServerScope.__name__ = f"HasServerScope_{scope or 'any'}"
    return HasServerScope


# --- player bearer tokens (docs/api.md §3.2) ---------------------------------------------

_TOKEN_SALT = "leaderboard.player-token.v1"


def make_player_token(game_id: int, player_pk: int, expires_at: datetime, external_id: str | None = None) -> str:
    """A signed, self-contained token: checking it needs no database read. With the player's
    id (`x`), a read of the player's own board pages needs no id lookup either (docs/reads.md,
    "The thin path"); tokens without it are checked the same way."""
    data: dict[str, object] = {"g": game_id, "p": player_pk, "e": int(expires_at.timestamp())}
    if external_id is not None:
        data["x"] = external_id
    return signing.dumps(data, salt=_TOKEN_SALT)


@dataclass(frozen=True)
class PlayerPrincipal:
    """request.user for a player's bearer token (external_id: the player's id, when the token
    carries it)."""

    game_id: int
    player_pk: int
    is_authenticated: bool = True
    is_staff: bool = False
    external_id: str | None = None


# Checked tokens, per process: a token is immutable, so checking its signature once is enough;
# its expiry is checked on every use. Bounded, emptied whole when full.
_TOKENS_MAX = 20_000
_tokens: dict[str, tuple[int, PlayerPrincipal]] = {}


def player_from_token(token: str) -> PlayerPrincipal | None:
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
        )
        hit = (int(data.get("e", 0)), principal)
        if len(_tokens) >= _TOKENS_MAX:
            _tokens.clear()
        _tokens[token] = hit
    if hit[0] < time.time():
        return None
    return hit[1]


class PlayerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[PlayerPrincipal, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "):
            return None
        token = header[len("Bearer ") :].strip()
        principal = player_from_token(token)
        if principal is None:
            raise exceptions.AuthenticationFailed("the bearer token is invalid or expired")
        return principal, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="leaderboard"'
