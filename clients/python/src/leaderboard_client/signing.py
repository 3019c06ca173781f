"""Request signing (docs/api.md §3.1): the one implementation on the client side.

Every request from a game server carries `X-Key-Id` and
`X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<METHOD>.<path>.<body>")>`,
where `<path>` is the path with its query string exactly as sent and `<body>` the raw body."""

from __future__ import annotations

import hashlib
import hmac
import time


def sign(secret: str, method: str, path: str, body: bytes = b"", timestamp: int | None = None) -> str:
    """The `X-Signature` value for one request. `path` includes the query string as sent."""
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.{method.upper()}.{path}.".encode() + body, hashlib.sha256)
    return f"t={t},v1={mac.hexdigest()}"


def signed_headers(key_id: str, secret: str, method: str, path: str, body: bytes = b"") -> dict[str, str]:
    """`X-Key-Id` and a fresh `X-Signature`: a retry signs again (the signature ages, the body does not)."""
    return {"X-Key-Id": key_id, "X-Signature": sign(secret, method, path, body)}
