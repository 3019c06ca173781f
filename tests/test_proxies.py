"""The client address behind proxies (leaderboard_project/proxies.py, docs/operations.md "Behind
a load balancer"): the rightmost X-Forwarded-For address that is not a trusted proxy, walking
from the peer while the hop is trusted; loopback always trusted; a wrong TRUSTED_PROXIES stops
the start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import RequestFactory

from leaderboard_project.proxies import client_address, forwarded_client, trusted_proxies_parse
from scripts import web

REPO_ROOT = Path(__file__).resolve().parent.parent
BALANCERS = trusted_proxies_parse("10.0.0.0/8, 2001:db8:ff::/48")


@pytest.mark.parametrize(
    ("remote_addr", "forwarded", "client"),
    [
        # a client straight at the service: what it forwards is its own writing, ignored
        ("203.0.113.7", None, "203.0.113.7"),
        ("203.0.113.7", "198.51.100.1", "203.0.113.7"),
        ("127.0.0.2", "198.51.100.1", "127.0.0.2"),  # only 127.0.0.1 and ::1 are loopback's trust
        # make run's nginx over its unix socket (no address) or loopback: its one entry
        ("", "198.51.100.1", "198.51.100.1"),
        ("127.0.0.1", "198.51.100.1", "198.51.100.1"),
        ("::1", "2001:db8::9", "2001:db8::9"),
        # client -> balancer -> nginx: the balancer appended the client; a forgery stays left of it
        ("", "6.6.6.6, 198.51.100.1, 10.0.0.5", "198.51.100.1"),
        ("127.0.0.1", "198.51.100.1, 10.2.0.1, 10.0.0.5", "198.51.100.1"),
        ("10.0.0.5", "6.6.6.6, 198.51.100.1", "198.51.100.1"),
        # an untrusted hop in the middle is the client, whatever is left of it
        ("", "198.51.100.1, 203.0.113.50, 10.0.0.5", "203.0.113.50"),
        # every hop trusted: the request began at a proxy (a balancer's health check)
        ("", "10.0.0.9, 10.0.0.5", "10.0.0.9"),
        ("10.0.0.5", None, "10.0.0.5"),
        # what some balancers write: ports, brackets, IPv4-mapped IPv6; spaces and empty hops
        ("", "198.51.100.1:4711", "198.51.100.1"),
        ("", "[2001:db8::1]:4711, 10.0.0.5", "2001:db8::1"),
        ("::ffff:10.0.0.5", "198.51.100.1", "198.51.100.1"),
        ("", " 198.51.100.1 ,10.0.0.5 ", "198.51.100.1"),
        ("2001:db8:ff::1", "2001:db8::7", "2001:db8::7"),
        # a hop that is no address ends the walk at the last trusted one
        ("", "evil, 10.0.0.5", "10.0.0.5"),
        ("10.0.0.5", "not-an-address", "10.0.0.5"),
        ("", "not-an-address", "-"),
        ("", None, "-"),
    ],
)
def test_the_client_is_the_rightmost_untrusted_hop(remote_addr: str, forwarded: str | None, client: str) -> None:
    assert forwarded_client(remote_addr, forwarded, BALANCERS) == client


def test_client_address_reads_the_request_under_the_setting(settings) -> None:
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.1")
    settings.TRUSTED_PROXIES = trusted_proxies_parse("")
    assert client_address(request) == "10.0.0.5"  # not a trusted proxy: it is the client
    settings.TRUSTED_PROXIES = trusted_proxies_parse("10.0.0.5")
    assert client_address(request) == "198.51.100.1"
    assert client_address(None) == "-"


def test_trusted_proxies_parse_takes_addresses_and_cidrs_beside_loopback() -> None:
    assert [str(n) for n in trusted_proxies_parse("")] == ["127.0.0.1/32", "::1/128"]
    assert [str(n) for n in trusted_proxies_parse(" 10.0.0.5 ,, 192.168.0.0/16, 2001:db8::/32, 127.0.0.1")] == [
        "127.0.0.1/32",
        "::1/128",
        "10.0.0.5/32",
        "192.168.0.0/16",
        "2001:db8::/32",
    ]


@pytest.mark.parametrize("entry", ["nope", "10.0.0.300", "10.0.0.5/16", "10.0.0.0/33", "10.0.0.0 10.0.0.1"])
def test_a_wrong_entry_is_refused_by_name(entry: str) -> None:
    with pytest.raises(ValueError, match=f"TRUSTED_PROXIES: '{entry}' is not an IP address or CIDR network"):
        trusted_proxies_parse(f"10.1.0.0/16,{entry}")


def test_a_wrong_entry_stops_django_and_the_web_tier_at_start(monkeypatch) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test",
        "TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal",
    }
    checked = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode != 0
    assert "ImproperlyConfigured: TRUSTED_PROXIES: 'proxy.internal' is not an IP address or CIDR network" in (
        checked.stderr
    )
    monkeypatch.setenv("TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal")
    with pytest.raises(SystemExit, match="web: TRUSTED_PROXIES: 'proxy.internal' is not an IP address"):
        web.serve(port=1, workers=1, topology="uvicorn")


def test_nginx_believes_x_forwarded_for_only_from_trusted_proxies(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRUSTED_PROXIES", "10.0.0.0/8,2001:db8::/32")
    conf = web.nginx_config(8000, tmp_path)
    trusted = [line.split()[1].rstrip(";") for line in conf.splitlines() if "set_real_ip_from" in line]
    assert trusted == ["127.0.0.1/32", "::1/128", "10.0.0.0/8", "2001:db8::/32"]
    assert "real_ip_header X-Forwarded-For;" in conf and "real_ip_recursive on;" in conf
    # the workers get the client realip found, alone, never the client's own header
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in conf
    assert "$proxy_add_x_forwarded_for" not in conf and "$http_x_forwarded_for" not in conf
