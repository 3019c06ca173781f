"""Who the client is, behind proxies (docs/operations.md, "Behind a load balancer").

`TRUSTED_PROXIES` names the proxies in front of the service (addresses or CIDRs); `make run`'s
own nginx, on loopback (127.0.0.1, ::1) or on a unix socket, is always trusted. The client is
the rightmost `X-Forwarded-For` address that is not a trusted proxy: walking from the peer
(`REMOTE_ADDR`) leftwards while the hop is trusted, the first untrusted one. Whatever is left
of it was written by the client itself and is never believed. `client_address` is the one
place this is computed: the sign-in throttle (django-axes' AXES_CLIENT_IP_CALLABLE), the read
limits (boards/throttles.py, a player's own read) and anything else counting per address call it.
scripts/web.py gives its nginx the same rule (its realip module) from the same setting, parsed
by `trusted_proxies_parse`, so both agree."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Protocol

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# make run's own nginx talks to the web processes from loopback (or over a unix socket, which
# has no address at all). Only these two: the rest of 127.0.0.0/8 is as untrusted as any client,
# so a test can play an untrusted peer from 127.0.0.2 (Linux routes all of 127/8 to lo).
ALWAYS_TRUSTED: tuple[Network, ...] = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("::1/128"))
UNKNOWN = "-"  # no address to be had (no request; a peer on a unix socket that forwarded none)


def trusted_proxies_parse(value: str) -> tuple[Network, ...]:
    """The networks of TRUSTED_PROXIES ("10.0.0.5, 10.1.0.0/16, 2001:db8::/32"), the always
    trusted loopback first. ValueError names an entry that is no address or CIDR (a CIDR with
    host bits set, 10.0.0.5/16, is refused too: it is usually a typo for another network)."""
    networks = list(ALWAYS_TRUSTED)
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        try:
            network = ipaddress.ip_network(entry)
        except ValueError as exc:
            raise ValueError(f"TRUSTED_PROXIES: {entry!r} is not an IP address or CIDR network ({exc})") from None
        if network not in networks:
            networks.append(network)
    return tuple(networks)


def _address(text: str) -> Address | None:
    """An X-Forwarded-For hop as an address: plain, or with a port as some balancers write it
    (192.0.2.1:4711, [2001:db8::1]:4711); an IPv4-mapped IPv6 address as the IPv4 one."""
    text = text.strip()
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        if text.startswith("["):
            host = text[1 : text.find("]")]
        elif text.count(":") == 1:
            host = text.partition(":")[0]
        else:
            return None
        try:
            found = ipaddress.ip_address(host)
        except ValueError:
            return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def forwarded_client(remote_addr: str, forwarded_for: str | None, trusted: tuple[Network, ...]) -> str:
    """The rule itself: the rightmost address of the chain (X-Forwarded-For, then the peer)
    that is not in *trusted*. A peer with no address (a unix socket: only a local proxy can
    reach it) counts as trusted. When every hop is trusted, the leftmost one (the request began
    at a proxy: a balancer's health check). A hop that is no address stops the walk at the last
    trusted hop: a proxy of ours never writes one, so it came from the client."""
    peer = _address(remote_addr) if remote_addr else None
    if peer is not None and not any(peer in net for net in trusted):
        return str(peer)
    current = str(peer) if peer is not None else UNKNOWN
    if not forwarded_for:
        return current
    for hop in reversed(forwarded_for.split(",")):
        address = _address(hop)
        if address is None:
            return current
        current = str(address)
        if not any(address in net for net in trusted):
            return current
    return current


class HasMeta(Protocol):
    @property
    def META(self) -> Mapping[str, Any]: ...  # noqa: N802  (Django's name)


def client_address(request: HasMeta | None) -> str:
    """The client's address of a request (Django's, DRF's or anything with its META) under
    settings.TRUSTED_PROXIES. The one function every per-address limit counts with."""
    if request is None:
        return UNKNOWN
    meta = request.META
    return forwarded_client(meta.get("REMOTE_ADDR") or "", meta.get("HTTP_X_FORWARDED_FOR"), settings.TRUSTED_PROXIES)
