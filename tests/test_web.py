"""The web tier as `make run` and the benchmarks start it (scripts/web.py): HTTP and
websockets answer on one port, through the real servers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from boards import live
from scripts import web
from scripts.services import spare_port
from tests.factories import migrated_test_database_url

REPO_ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 60.0


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def nginx_needed() -> None:
    """A test of the nginx stack fails where nginx is missing, never skips or runs on uvicorn
    alone: `make test` installs it (scripts/web.py, as `make run` does)."""
    if web.find_nginx(install=False) is None:
        pytest.fail("nginx is needed for this test: `make test` installs it (apt-get install nginx-light)")


@contextlib.contextmanager
def serving(topology: str, http: str | None = None, **env_extra: str) -> Iterator[int]:
    """scripts/web.py on a free port until /healthz answers 200; stopped (its whole group) after."""
    port = spare_port()
    env = {
        **os.environ,
        "DATABASE_URL": migrated_test_database_url(),  # the test database, migrated, not the developer's
        "REDIS_URL": os.environ.get("TEST_REDIS_URL", os.environ.get("REDIS_URL", "")),
        **env_extra,
    }
    proc = subprocess.Popen(
        [sys.executable, "scripts/web.py", "--port", str(port), "--workers", "1", "--topology", topology]
        + (["--http", http] if http else []),
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert proc.poll() is None, proc.communicate()[0].decode(errors="replace")[-2000:]
            try:
                if _get(f"http://127.0.0.1:{port}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"{topology}: /healthz did not answer 200 in {START_TIMEOUT:.0f} s"
            time.sleep(0.1)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


@pytest.fixture(params=[("nginx", "granian"), ("nginx", "gunicorn"), ("uvicorn", None)], ids=lambda p: p[1] or p[0])
def served(request, transactional_db) -> Iterator[tuple[str, int]]:
    topology, http = request.param
    if topology == "nginx":
        nginx_needed()
    with serving(topology, http) as port:
        yield topology, port


def test_http_and_websockets_share_the_port(served) -> None:
    topology, port = served
    status, headers, body = _get(f"http://127.0.0.1:{port}/api/v1/nothing-here")
    assert status == 404
    assert json.loads(body)["error"]["code"] == "not_found"
    if topology == "nginx":
        assert headers.get("Server") == "nginx"  # HTTP went through the proxy, to the WSGI workers
        # the address rate limits see is the client's, from nginx's X-Forwarded-For, on every server
        status, _, body = _get(f"http://127.0.0.1:{port}/", headers={"X-Forwarded-For": "203.0.113.9"})
        assert status == 200 and b"<html" in body.lower()
    # a websocket handshake on the same port reaches the Channels application: an unknown path
    # is accepted, then closed with the documented code
    with (
        connect(f"ws://127.0.0.1:{port}/ws/no/such/socket", open_timeout=10) as ws,
        pytest.raises(ConnectionClosed) as closed,
    ):
        # the client offers permessage-deflate (as browsers do); the server declines it, so a
        # message fanned out to N sockets is not compressed N times (docs/live.md)
        assert "permessage-deflate" in (ws.request.headers.get("Sec-WebSocket-Extensions") or "")
        assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
        ws.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == live.NOT_FOUND


def test_ws_workers_sets_how_many_uvicorn_processes_serve_websockets(monkeypatch, tmp_path: Path) -> None:
    def uvicorn_workers() -> str:
        argv = dict(web.commands("nginx", 8000, 3, tmp_path, "/usr/sbin/nginx"))["uvicorn"]
        return argv[argv.index("--workers") + 1]

    monkeypatch.delenv("WS_WORKERS", raising=False)
    assert uvicorn_workers() == "1"
    monkeypatch.setenv("WS_WORKERS", "4")
    assert uvicorn_workers() == "4"


def test_granian_is_the_default_http_server_and_keeps_upstream_connections(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WEB_HTTP", raising=False)
    names = [name for name, _ in web.commands("nginx", 8000, 3, tmp_path, "/usr/sbin/nginx", web.choose_http(None))]
    # one single-worker granian per socket, nginx balancing requests to the least busy one
    assert names == ["granian-0", "granian-1", "granian-2", "uvicorn", "nginx"]
    upstream = (tmp_path / "nginx.conf").read_text().split("upstream django_wsgi")[1].split("}")[0]
    assert "least_conn;" in upstream and "keepalive 64;" in upstream and upstream.count("server unix:") == 3
    monkeypatch.setenv("WEB_HTTP", "gunicorn")
    names = [name for name, _ in web.commands("nginx", 8000, 3, tmp_path, "/usr/sbin/nginx", web.choose_http(None))]
    assert names == ["gunicorn", "uvicorn", "nginx"]
    assert "keepalive" not in (tmp_path / "nginx.conf").read_text().replace("keepalive_requests", "")


def test_nginx_refuses_a_body_over_the_limit_before_reading_it(transactional_db) -> None:
    """A 256 MiB upload is answered 413 (the error body of docs/api.md §14) from its headers alone: nothing is
    spooled, and a body just over the limit is a 413 every time, never a 502."""
    nginx_needed()
    limit = 64 * 1024
    with serving("nginx", MAX_REQUEST_BODY_BYTES=str(limit)) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(
                b"POST /api/v1/games/chess/matches HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 268435456\r\n\r\n"
            )
            reply = sock.recv(65536).decode(errors="replace")  # no body sent: nginx answers from the headers
        assert reply.startswith("HTTP/1.1 413"), reply[:200]
        assert json.loads(reply.split("\r\n\r\n", 1)[1])["error"]["code"] == "payload_too_large"
        for _ in range(7):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/v1/games/chess/matches", data=b"x" * (limit + 1), method="POST"
            )
            try:
                urllib.request.urlopen(request, timeout=10)
                status = 200
            except urllib.error.HTTPError as exc:
                status = exc.code
            assert status == 413
