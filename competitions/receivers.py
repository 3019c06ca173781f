"""Where a settlement webhook may be sent (docs/competitions.md, "Receivers"; docs/api.md §13):
only to public addresses, checked when the game's configuration is applied and again, against
the addresses the name resolves to then, at every delivery attempt. WEBHOOK_ALLOW_PRIVATE=1
(local development, the tests' receivers on loopback) lifts the check."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
from django.conf import settings

APPLY_RESOLVE_SECONDS = 3.0  # a configuration's apply waits no longer than this on DNS
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits
# getaddrinfo has no timeout of its own: it runs here, and an attempt past its deadline stops
# waiting for it (asyncio's default executor would be waited for when the run's loop closes)
_resolver = ThreadPoolExecutor(max_workers=8, thread_name_prefix="webhook-dns")


class Refused(Exception):
    """A receiver's address that is not public; the message says which and why."""


def allowed_private() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE)


def address_refusal(address: str) -> str | None:
    """Why this IP address is not a receiver's (None: it is public). IPv6 addresses that carry an
    IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64) are judged by that one too."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone id is not part of it
    for candidate in _with_embedded(ip):
        if (
            not candidate.is_global
            or candidate.is_multicast
            or candidate.is_reserved
            or candidate.is_unspecified
            or candidate.is_loopback
            or candidate.is_link_local
            or (isinstance(candidate, ipaddress.IPv6Address) and candidate.is_site_local)
        ):
            return f"{address} is not a public address"
    return None


def _with_embedded(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            found.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            found.append(ip.sixtofour)
        if ip.teredo is not None:
            found.extend(ip.teredo)
        if ip in _NAT64:
            found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def _named_loopback(host: str) -> bool:
    """RFC 6761: `localhost` and every name under it are loopback, whatever DNS says."""
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def url_refusal(url: str) -> str | None:
    """Why this webhook URL is refused when the configuration is applied (None: accepted).

    A host that is an address, or a name that resolves, is refused unless every address is
    public. A name that does not resolve now (or not within APPLY_RESOLVE_SECONDS) is accepted:
    the receiver's name may not exist yet where the file is applied; each delivery resolves it
    again and refuses a private address then (docs/competitions.md, "Receivers")."""
    if allowed_private():
        return None
    target = httpx.URL(url)
    host = target.raw_host.decode("ascii")
    if _named_loopback(host):
        return f"{host} is a loopback name" + _HINT
    if _literal(host) is not None:
        reason = address_refusal(host)
        return reason + _HINT if reason else None
    for address in _resolve_briefly(host, target.port or _default_port(target)):
        reason = address_refusal(address)
        if reason:
            return f"{host} resolves to {address}, not a public address" + _HINT
    return None


_HINT = " (WEBHOOK_ALLOW_PRIVATE=1 allows it, for local development)"


def _default_port(target: httpx.URL) -> int:
    return 443 if target.scheme == "https" else 80


def _resolve_briefly(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, or none when it does not resolve in time."""
    found: list[str] = []

    def resolve() -> None:
        with contextlib.suppress(OSError, UnicodeError):  # not resolving: accepted, as said above
            found.extend(str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))

    worker = threading.Thread(target=resolve, daemon=True, name="webhook-apply-dns")
    worker.start()
    worker.join(APPLY_RESOLVE_SECONDS)
    return list(found) if not worker.is_alive() else []


async def vetted_addresses(target: httpx.URL) -> list[str]:
    """The addresses a delivery attempt may connect to: `target`'s host resolved now, every
    address checked (raises Refused when any is not public, unless WEBHOOK_ALLOW_PRIVATE). The
    attempt connects to one of these itself, so a second lookup (DNS rebinding) cannot swap it.
    Raises OSError when the name does not resolve."""
    host = target.raw_host.decode("ascii")
    if not allowed_private() and _named_loopback(host):
        raise Refused(f"{host} is a loopback name")
    loop = asyncio.get_running_loop()
    infos = await loop.run_in_executor(
        _resolver,
        lambda: socket.getaddrinfo(host, target.port or _default_port(target), type=socket.SOCK_STREAM),
    )
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise OSError(f"{host} resolves to no address")
    if not allowed_private():
        for address in addresses:
            reason = address_refusal(address)
            if reason:
                raise Refused(reason if address == host else f"{host} resolves to {address}, not a public address")
    return addresses
