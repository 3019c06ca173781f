"""A loopback HTTP proxy in front of the real service that misbehaves on cue, for what a
healthy service does not do on demand: drop the connection after the service has stored a
match (so the client cannot know), or answer 503 `overloaded` / 429 with a Retry-After before
passing requests on. Standard library only; it records every request it saw."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FORWARD = "forward"
DROP_AFTER_FORWARD = "drop"  # pass the request on, then close without answering
OVERLOADED = "overloaded"  # 503 {"error": {"code": "overloaded"}}, Retry-After: 1, nothing forwarded
RATE_LIMITED = "rate_limited"  # 429, Retry-After: 1, nothing forwarded


@dataclass
class Seen:
    at: float
    method: str
    path: str
    body: bytes
    action: str


@dataclass
class Proxy:
    url: str
    plan: list[str]  # actions for the next requests, in order; then FORWARD
    seen: list[Seen] = field(default_factory=list)


@contextmanager
def proxy(upstream: str, plan: list[str]) -> Iterator[Proxy]:
    up = urlsplit(upstream)
    state = Proxy("", list(plan))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                action = state.plan.pop(0) if state.plan else FORWARD
                state.seen.append(Seen(time.monotonic(), self.command, self.path, body, action))
            if action in (OVERLOADED, RATE_LIMITED):
                status, code = (503, "overloaded") if action == OVERLOADED else (429, "rate_limited")
                payload = json.dumps({"error": {"code": code, "message": "try again later"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Retry-After", "1")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            conn.close()
            if action == DROP_AFTER_FORWARD:
                self.close_connection = True
                self.connection.close()  # the service stored it; the client hears nothing
                return
            self.send_response(response.status)
            for k, v in response.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _any  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
