"""How our authentication classes appear in the OpenAPI schema (drf-spectacular)."""

from typing import ClassVar

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object


class _FixedScheme(OpenApiAuthenticationExtension):
    """An authentication class whose security definition never varies. It names no
    target_class itself, so drf-spectacular never matches it: only its subclasses."""

    definition: ClassVar[dict] = {}

    def get_security_definition(self, auto_schema: object) -> dict:
        return self.definition


class ServerKeySchema(_FixedScheme):
    target_class = "scores.auth.ServerKeyAuthentication"
    name = "serverKey"
    definition: ClassVar[dict] = {
        "type": "apiKey",
        "in": "header",
        "name": "X-Signature",
        "description": (
            "Game servers send X-Key-Id: <key_id> and X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "
            '"<t>.<METHOD>.<path with query>.<raw body>")>. Signatures more than 300 s old or ahead are refused.'
        ),
    }


class PlayerTokenSchema(_FixedScheme):
    target_class = "scores.auth.PlayerTokenAuthentication"
    name = "playerToken"
    definition: ClassVar[dict] = {
        **build_bearer_security_scheme_object("Authorization", "Bearer"),
        "description": "A player token from POST .../players/{player}/token.",
    }
