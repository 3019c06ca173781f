"""How our authentication classes appear in the OpenAPI schema (drf-spectacular)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ServerKeySchema(OpenApiAuthenticationExtension):
    target_class = "scores.auth.ServerKeyAuthentication"
    name = "serverKey"

    def get_security_definition(self, auto_schema: object) -> dict:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "X-Signature",
            "description": (
                "Game servers send X-Key-Id: <key_id> and X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "
                '"<t>.<METHOD>.<path with query>.<raw body>")>. Signatures more than 300 s old or ahead are refused.'
            ),
        }


class PlayerTokenSchema(OpenApiAuthenticationExtension):
    target_class = "scores.auth.PlayerTokenAuthentication"
    name = "playerToken"

    def get_security_definition(self, auto_schema: object) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A player token from POST .../players/{player}/token.",
        }
