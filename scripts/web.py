#!/usr/bin/env python3
"""The web tier, on one port: the only place that says which server processes serve HTTP and
websockets. `make run` (scripts/run.py) and the benchmarks (bench/server.py) both start it.

    python scripts/web.py [--port 8000] [--workers N] [--topology nginx|uvicorn] [--http granian|gunicorn]

Topology "nginx" (the default when nginx is found):

    client -> nginx :PORT  --/ws/...-->  uvicorn, 1 worker (leaderboard_project.asgi: Channels)
                           --the rest->  N granian processes, WSGI (leaderboard_project.wsgi),
                                         least_conn; or gunicorn, N sync workers (--http gunicorn)

over unix sockets in a private temporary directory. WEB_HTTP chooses the HTTP server too. granian
keeps nginx's upstream connections open and runs the WSGI app on one thread per process, as a
sync worker does; gunicorn's sync workers close the connection after every response, and a bare
request cost twice the server CPU there (docs/BENCHMARKS.md, "Serving stack"). Every server
process writes its /metrics values into a fresh directory there (PROMETHEUS_MULTIPROC_DIR: prometheus-client's multiprocess
mode), so a scrape answered by any worker sums them all. Django's ASGI handler costs ~4.5x a WSGI
worker per plain request on this kind of machine (docs/BENCHMARKS.md, "What each change
bought"); websockets need ASGI, the HTTP API does not. nginx buffers slow clients, so sync
workers are never held by one. It takes the client's address from X-Forwarded-For only when its
peer is a trusted proxy (TRUSTED_PROXIES, and loopback: the realip module) and hands the workers
that address alone in X-Forwarded-For, which Django's rule (leaderboard_project/proxies.py) reads
back unchanged: every per-address limit, nginx's or Django's, counts the real client.

Topology "uvicorn": one uvicorn serving both through Django's ASGI handler, N workers. The
fallback when nginx is missing and cannot be installed (as root with apt-get, `nginx-light`
is installed), with a message saying it is the slow path. WEB_TOPOLOGY in the environment
chooses too.

The process stays in the foreground and supervises its servers: when one exits, it stops the
others and exits non-zero; SIGTERM/SIGINT stop all of them. Its servers share its process
group, so `killpg` on it stops everything. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

REPO_ROOT = Path(__file__).resolve().parent.parent
# The virtualenv's bin/ (as scripts/run.py: not resolved, a venv's python is a symlink).
VENV_BIN = Path(sys.executable).parent
TOPOLOGIES = ("nginx", "uvicorn")
HTTP_SERVERS = ("granian", "gunicorn")  # behind nginx; the first is the default
NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
NGINX_PACKAGE = "nginx-light"
# Debian 13 and newer Ubuntus have no nginx-light: their plain nginx package is as small.
NGINX_PACKAGES = (NGINX_PACKAGE, "nginx")
LOCAL_DIR = REPO_ROOT / ".local"
# The public reads the edge cache keeps (docs/api.md §5: top, histogram), nothing else.
EDGE_CACHED_PATHS = r"^/api/v1/games/[^/]+/boards/[^/]+/(top|histogram)$"
# What makes a request authenticated (docs/reads.md, "The edge cache"): a bearer (player)
# token, a server key's signature headers, a session cookie, a token in the query string.
EDGE_PRIVATE = "$http_authorization$http_x_key_id$http_x_signature$cookie_sessionid$arg_token"
STOP_GRACE_SECONDS = 8.0
DEFAULT_WORKERS = (os.cpu_count() or 1) + 1  # sync workers wait on Redis/Postgres: one more than cores


def ws_workers() -> int:
    """uvicorn processes for /ws/ in the nginx topology (WS_WORKERS, default 1): one served 10,000
    live sockets of a board window at 40% of a core on this machine kind (docs/live.md); groups
    are shared through the channel layer, so more processes add up."""
    return max(1, int(os.environ.get("WS_WORKERS") or 1))


def ws_deflate_args() -> list[str]:
    """uvicorn's permessage-deflate for /ws/ (WS_DEFLATE=1 turns it on; default off). On, every
    socket keeps its own zlib contexts and compresses each message itself: a top message going
    to N sockets is compressed N times, the fan-out's largest per-socket cost, and the contexts
    are the largest part of a socket's memory (docs/live.md, "Measuring")."""
    on = os.environ.get("WS_DEFLATE", "0") not in ("", "0", "false")
    return ["--ws-per-message-deflate", "true" if on else "false"]


APPEND_THREADS = 8  # WEB_THREADS' default beside the append service (docs/BENCHMARKS.md, "Group commit that groups")


def wsgi_threads() -> int:
    """Threads running Django in each granian worker (WEB_THREADS; default 1, or APPEND_THREADS
    with WEB_APPEND_SERVICE=1: a single submission's thread then mostly waits for the append
    service, and the service can gather only as many matches as there are threads waiting)."""
    default = APPEND_THREADS if os.environ.get("WEB_APPEND_SERVICE", "0").strip() == "1" else 1
    return max(1, int(os.environ.get("WEB_THREADS") or default))


def log(message: str) -> None:
    print(f"web: {message}", file=sys.stderr, flush=True)


def find_nginx(install: bool = True) -> str | None:
    """nginx's binary: on PATH, in the usual places, or installed with apt-get when root."""
    found = shutil.which("nginx") or next((p for p in NGINX_CANDIDATES if os.access(p, os.X_OK)), None)
    if found or not install:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        log(f"nginx not found: installing {NGINX_PACKAGE} with apt-get")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(["apt-get", "update"], env=env, stdout=sys.stderr).returncode != 0:
            log("`apt-get update` failed")
            return None
        for package in NGINX_PACKAGES:
            cmd = ["apt-get", "install", "-y", "--no-install-recommends", package]
            if subprocess.run(cmd, env=env, stdout=sys.stderr).returncode == 0:
                return find_nginx(install=False)
            log(f"`{' '.join(cmd)}` failed")
        return None
    return None


def edge_cache_dir(port: int) -> Path | None:
    """Where nginx keeps the edge cache of the public top and histogram reads for the stack on
    *port* (.local/edge-cache/<port>/), or None when EDGE_CACHE=0 turns it off."""
    if os.environ.get("EDGE_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return LOCAL_DIR / "edge-cache" / str(port)


def max_body_bytes() -> int:
    """MAX_REQUEST_BODY_BYTES as leaderboard_project/settings.py reads it (same default)."""
    return int(os.environ.get("MAX_REQUEST_BODY_BYTES") or 16 * 1024 * 1024)


# The error body of docs/api.md §14 for nginx's own 413 (its default is an HTML page).
TOO_LARGE_BODY = '{"error":{"code":"payload_too_large","message":"request body exceeds the limit of %d bytes"}}'


# THROTTLE_PUBLIC_READS' default, as leaderboard_project/settings.py has it (a test holds them equal)
DEFAULT_PUBLIC_READS = "1200/min"
RATE_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# The 429 of docs/api.md §14 for nginx's own refusals (its default is an HTML page and 503)
RATE_LIMITED = '{"error":{"code":"rate_limited","message":"too many requests from this address; retry after %d s"}}'


def read_limit() -> tuple[str, int, int] | None:
    """THROTTLE_PUBLIC_READS (leaderboard_project/limits.py reads the same) as nginx's
    limit_req takes it: (rate, burst, Retry-After seconds), or None when "" turns it off.

    nginx counts a leaky bucket, not Django's fixed windows: N per period lets a client send N
    at once (burst N-1 beside the request itself, nodelay) and then one every period/N, so a
    refused client may retry after period/N seconds, rounded up. Across a long run both allow
    about N per period."""
    rate = (os.environ.get("THROTTLE_PUBLIC_READS", DEFAULT_PUBLIC_READS)).strip()
    if not rate:
        return None
    count_text, _, period = rate.partition("/")
    try:
        count, seconds = int(count_text), RATE_SECONDS[period.strip()[0]]
    except (ValueError, KeyError, IndexError):
        raise SystemExit(f"web: THROTTLE_PUBLIC_READS: {rate!r} is not a rate such as 1200/min") from None
    if count < 1:
        raise SystemExit(f"web: THROTTLE_PUBLIC_READS: {rate!r} allows nothing")
    # nginx takes r/s or r/m in whole numbers: per second when it divides, else per minute
    # (rounded up: never stricter than the setting)
    nginx_rate = f"{count // seconds}r/s" if count % seconds == 0 else f"{math.ceil(count * 60 / seconds)}r/m"
    return nginx_rate, count - 1, max(1, math.ceil(seconds / count))


def read_limit_config(limit: tuple[str, int, int] | None) -> tuple[str, str, str]:
    """The http-level, server-level and location-level parts of the per-address limit on the
    reads the edge cache answers (docs/reads.md, "Rate limits"): counted before the cache is
    looked at, so a cached answer counts as any other. Keyed on $binary_remote_addr, the client
    address realip found (real_ip_config). Empty parts when the limit is off."""
    if limit is None:
        return "", "", ""
    rate, burst, retry_after = limit
    http = f"""
    limit_req_zone $binary_remote_addr zone=public_reads:16m rate={rate};
    limit_req_status 429;
    limit_req_log_level info;"""
    server = f"""
        error_page 429 = @rate_limited;
        location @rate_limited {{
            default_type application/json;
            add_header Retry-After {retry_after} always;
            add_header Cache-Control no-store always;
            return 429 '{RATE_LIMITED % retry_after}';
        }}"""
    location = "\n            limit_req zone=public_reads" + (f" burst={burst}" if burst else "") + " nodelay;"
    return http, server, location


def edge_cache_config(cache_dir: Path, limit: str = "") -> tuple[str, str]:
    """The http-level and the location-level parts of the edge cache.

    A response is kept for what the origin says: top answers carry `X-Accel-Expires: @<second>`
    (boards/api/top.py), the end of the wall-clock second their page was computed in, because
    nginx counts a max-age in whole seconds from the whole second it stored the answer in and
    would keep `max-age=1` for up to 2 s (docs/api.md §5.2 allows 1 s); histograms keep their
    `max-age=60`. Degraded answers say `X-Accel-Expires: 0`. Only 200s are kept: anything with
    Set-Cookie, `private` or `no-store` is never stored (nginx's defaults), errors are excluded
    below. An authenticated request is neither answered from the cache nor stored in it.
    One request per key goes to Django when the entry is missing (proxy_cache_lock) or expired
    (use_stale updating: the others get the copy being replaced); the key is the Host and the
    path with its query: these answers are the same for every Origin (`Access-Control-Allow-
    Origin: *`, leaderboard_project/cors.py), and a preflight (OPTIONS) is never cached.
    *limit*: read_limit_config's location part, the per-address limit on these reads."""
    http = f"""
    proxy_cache_path {cache_dir} levels=1:2 keys_zone=edge:8m max_size=256m inactive=10m use_temp_path=off;
    map "{EDGE_PRIVATE}" $edge_private {{ "" 0; default 1; }}
    map $upstream_status $edge_not_ok {{ 200 0; default 1; }}"""
    location = f"""
        location ~ {EDGE_CACHED_PATHS} {{{limit}
            proxy_pass http://django_wsgi;
            proxy_cache edge;
            proxy_cache_key "$http_host$request_uri";
            proxy_cache_lock on;
            proxy_cache_lock_timeout 5s;
            proxy_cache_use_stale updating;
            proxy_cache_bypass $edge_private;
            proxy_no_cache $edge_private $edge_not_ok;
            add_header X-Cache-Status $upstream_cache_status always;
        }}"""
    return http, location


def trusted_proxies() -> list[str]:
    """TRUSTED_PROXIES as networks nginx takes, loopback first, parsed as Django parses it
    (leaderboard_project/proxies.py); a wrong entry stops the start with its name."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from leaderboard_project.proxies import trusted_proxies_parse

    try:
        return [str(net) for net in trusted_proxies_parse(os.environ.get("TRUSTED_PROXIES", ""))]
    except ValueError as exc:
        raise SystemExit(f"web: {exc}") from None


def real_ip_config(trusted: list[str]) -> str:
    """The realip module's part: $remote_addr becomes the rightmost X-Forwarded-For address
    that is not a trusted proxy, walking from the peer while it is one (real_ip_recursive), the
    rule of leaderboard_project/proxies.py. A peer that is not trusted is the client, whatever
    it forwards. Anything keyed on $remote_addr or $binary_remote_addr (a limit_req zone, a
    log line) counts real clients."""
    sources = "".join(f"\n    set_real_ip_from {net};" for net in trusted)
    return f"{sources}\n    real_ip_header X-Forwarded-For;\n    real_ip_recursive on;"


def wsgi_sockets(run_dir: Path, http: str, workers: int) -> list[Path]:
    """The unix sockets nginx proxies HTTP to: gunicorn's one (its workers share it), or one per
    granian process."""
    if http == "granian":
        return [run_dir / f"wsgi-{i}.sock" for i in range(workers)]
    return [run_dir / "wsgi.sock"]


def nginx_config(
    port: int,
    run_dir: Path,
    host: str = "127.0.0.1",
    max_body: int | None = None,
    wsgi: list[Path] | None = None,
    keepalive: bool = False,
    edge_cache: Path | None = None,
    trusted: list[str] | None = None,
) -> str:
    """nginx in the foreground, logs to stderr, temporary files in run_dir.

    Bodies above MAX_REQUEST_BODY_BYTES are refused by nginx itself, from Content-Length
    before reading a byte (or, chunked, as soon as the limit is passed): nothing larger is
    spooled to disk or reaches a worker, and the answer is always 413 with the error body of docs/api.md §14
    (Django refusing it mid-upload made nginx answer 502 now and then).

    *wsgi*: the HTTP servers' sockets (default run_dir/wsgi.sock); several are balanced by
    least_conn, each request to the one with the fewest in flight. With *keepalive* (servers
    that keep connections: granian), nginx keeps up to 64 idle upstream connections and reuses
    them, instead of a new one per request.

    *edge_cache*: a directory for nginx's cache of the public, signed-out top and histogram
    reads (docs/reads.md, "The edge cache"); None passes every request through.

    *trusted*: the proxies whose X-Forwarded-For is believed (default: TRUSTED_PROXIES and
    loopback, trusted_proxies())."""
    user = "user root root;\n" if os.geteuid() == 0 else ""  # workers must reach the sockets
    limit = max_body_bytes() if max_body is None else max_body
    sockets = wsgi or [run_dir / "wsgi.sock"]
    upstream = " ".join(
        [*(["least_conn;"] if len(sockets) > 1 else []), *(f"server unix:{p} max_fails=0;" for p in sockets)]
        + (["keepalive 64;"] if keepalive else [])
    )
    # max_fails=0: nginx never takes a server out for fail_timeout (10 s of "no live upstreams"
    # after one refused connect); a failed connect still moves the request to the next one.
    # At the server level: a location with proxy_set_header of its own would not inherit Host & co
    server_keepalive = '\n        proxy_http_version 1.1;\n        proxy_set_header Connection "";' if keepalive else ""
    limit_http, limit_server, limit_location = read_limit_config(read_limit() if edge_cache is not None else None)
    cache_http, cache_location = edge_cache_config(edge_cache, limit_location) if edge_cache is not None else ("", "")
    real_ip = real_ip_config(trusted_proxies() if trusted is None else trusted)
    return f"""# written by scripts/web.py
daemon off;
{user}worker_processes 1;
pid {run_dir}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {run_dir}/body;
    proxy_temp_path {run_dir}/proxy;
    fastcgi_temp_path {run_dir}/fastcgi;
    uwsgi_temp_path {run_dir}/uwsgi;
    scgi_temp_path {run_dir}/scgi;
    client_max_body_size {limit};
    keepalive_requests 100000;
    server_tokens off;
    upstream django_wsgi {{ {upstream} }}
    upstream django_asgi {{ server unix:{run_dir}/asgi.sock; }}
    map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
    # behind a TLS-terminating proxy the request came over https: say so (Django believes it
    # only with DEPLOY_HTTPS=1, which sets SECURE_PROXY_SSL_HEADER; docs/operations.md)
    map $http_x_forwarded_proto $forwarded_proto {{ default $scheme; https https; }}{cache_http}{limit_http}{real_ip}
    server {{
        listen {host}:{port} reuseport;
        error_page 413 = @too_large;
        location @too_large {{
            default_type application/json;
            return 413 '{TOO_LARGE_BODY % limit}';
        }}{limit_server}
        proxy_set_header Host $http_host;
        # the client as realip found it, alone: Django's rule reads it back (its peer, this
        # nginx, is trusted), and nothing the client wrote further left reaches it
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_set_header X-Forwarded-Proto $forwarded_proto;{server_keepalive}
        location /ws/ {{
            proxy_pass http://django_asgi;
            proxy_http_version 1.1;
            # a location with proxy_set_header of its own inherits none of the server's: the
            # client as realip found it again, or the handshake limit would count what it wrote
            proxy_set_header X-Forwarded-For $remote_addr;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_read_timeout 1h;
        }}{cache_location}
        location / {{
            proxy_pass http://django_wsgi;
        }}
    }}
}}
"""


def commands(
    topology: str,
    port: int,
    workers: int,
    run_dir: Path,
    nginx: str | None,
    http: str = HTTP_SERVERS[0],
    edge_cache: Path | None = None,
) -> list[tuple[str, list[str]]]:
    """(name, argv) of each server process of a topology (*http*: the HTTP server behind nginx;
    *edge_cache*: nginx's cache directory, none without)."""
    bin_ = VENV_BIN
    if topology == "uvicorn":
        return [
            (
                "uvicorn",
                [str(bin_ / "uvicorn"), "leaderboard_project.asgi:application", "--host", "127.0.0.1",
                 "--port", str(port), "--workers", str(workers), "--no-access-log", "--log-level", "warning",
                 *ws_deflate_args()],
            )
        ]  # fmt: skip
    assert nginx is not None
    conf = run_dir / "nginx.conf"
    sockets = wsgi_sockets(run_dir, http, workers)
    conf.write_text(nginx_config(port, run_dir, wsgi=sockets, keepalive=http == "granian", edge_cache=edge_cache))
    if http == "granian":
        # One single-worker granian per socket, balanced by nginx: granian's own workers share
        # one socket and its runtime accepts connections whether Python is busy or not, so kept
        # connections pinned unevenly (one worker of three nearly idle under load, p99 x2).
        # WEB_THREADS Django threads each (1: as a sync worker, one request at a time and one
        # database connection), while granian's runtime keeps the connections.
        wsgi = [
            (
                f"granian-{i}",
                [str(bin_ / "granian"), "--interface", "wsgi", "leaderboard_project.wsgi:application",
                 "--uds", str(sock), "--uds-permissions", "0o600", "--workers", "1",
                 "--blocking-threads", str(wsgi_threads()), "--http", "1", "--no-ws", "--log-level", "warning"],
            )
            for i, sock in enumerate(sockets)
        ]  # fmt: skip
    else:
        wsgi = [
            (
                "gunicorn",
                [
                    str(bin_ / "gunicorn"),
                    "leaderboard_project.wsgi:application",
                    "-k",
                    "sync",
                    "-w",
                    str(workers),
                    "--bind",
                    f"unix:{run_dir}/wsgi.sock",
                    "--log-level",
                    "warning",
                    "--umask",
                    "0o077",
                    "-c",
                    "python:leaderboard_project.gunicorn_conf",
                ],
            )
        ]
    return [
        *wsgi,
        (
            "uvicorn",
            [str(bin_ / "uvicorn"), "leaderboard_project.asgi:application", "--uds", f"{run_dir}/asgi.sock",
             "--workers", str(ws_workers()), "--no-access-log", "--log-level", "warning", *ws_deflate_args()],
        ),
        ("nginx", [nginx, "-e", "stderr", "-c", str(conf)]),
    ]  # fmt: skip


def choose_topology(requested: str | None) -> tuple[str, str | None]:
    """The topology to run and nginx's binary (None for uvicorn)."""
    wanted = requested or os.environ.get("WEB_TOPOLOGY") or "nginx"
    if wanted not in TOPOLOGIES:
        raise SystemExit(f"web: unknown topology {wanted!r}; choose from {', '.join(TOPOLOGIES)}")
    if wanted == "uvicorn":
        return "uvicorn", None
    nginx = find_nginx()
    if nginx is None:
        log(
            "nginx not found and not installable here (needs root and apt-get): serving HTTP through "
            "Django's ASGI handler instead, several times slower per request. Install it with "
            f"`sudo apt-get install {NGINX_PACKAGE}` for the recommended setup."
        )
        return "uvicorn", None
    return "nginx", nginx


class Stop(Exception):
    pass


def _stop(signum: int, _frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def _listening(path: Path) -> bool:
    """The socket accepts connections (granian creates its file before it listens)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def _wait_for_sockets(paths: list[Path], procs: list[subprocess.Popen[bytes]], timeout: float = 60.0) -> None:
    """nginx starts once its upstreams listen, so the port never answers 502 at start-up (and,
    with several upstreams, nginx never takes one for failed)."""
    deadline = time.monotonic() + timeout
    while not all(_listening(p) for p in paths):
        if any(proc.poll() is not None for proc in procs) or time.monotonic() > deadline:
            return  # the supervision loop reports the failure
        time.sleep(0.05)


def choose_http(requested: str | None) -> str:
    wanted = requested or os.environ.get("WEB_HTTP") or HTTP_SERVERS[0]
    if wanted not in HTTP_SERVERS:
        raise SystemExit(f"web: unknown HTTP server {wanted!r}; choose from {', '.join(HTTP_SERVERS)}")
    return wanted


def serve(port: int, workers: int, topology: str | None = None, http: str | None = None) -> int:
    trusted_proxies()  # a wrong TRUSTED_PROXIES stops here, naming the entry, on any topology
    chosen, nginx = choose_topology(topology)
    http_server = choose_http(http)
    run_dir = Path(tempfile.mkdtemp(prefix=f"leaderboard-web-{port}-"))
    metrics_dir = run_dir / "metrics"
    metrics_dir.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _stop)
    code = 0
    edge_cache = edge_cache_dir(port) if chosen == "nginx" else None
    if edge_cache is not None:
        # a fresh cache per start: an answer kept by an earlier run may be another database's
        shutil.rmtree(edge_cache, ignore_errors=True)
        edge_cache.mkdir(parents=True)
    try:
        for name, argv in commands(chosen, port, workers, run_dir, nginx, http_server, edge_cache):
            if name == "nginx":
                sockets = [*wsgi_sockets(run_dir, http_server, workers), run_dir / "asgi.sock"]
                _wait_for_sockets(sockets, [p for _, p in procs])
            procs.append((name, subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL)))
        log(f"{chosen} topology on 127.0.0.1:{port}: " + ", ".join(name for name, _ in procs))
        while True:
            for name, proc in procs:
                if proc.poll() is not None:
                    log(f"{name} exited ({proc.returncode}); stopping the others")
                    return 1
            time.sleep(0.2)
    except (Stop, KeyboardInterrupt):
        return code
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # nginx first (QUIT: finish requests in flight), then the workers behind it
        for name, proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGQUIT if name == "nginx" else signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for _, proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(run_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("WEB_WORKERS") or DEFAULT_WORKERS),
        help=f"HTTP worker processes (default WEB_WORKERS or {DEFAULT_WORKERS})",
    )
    parser.add_argument("--topology", choices=TOPOLOGIES, help="default WEB_TOPOLOGY, else nginx when available")
    parser.add_argument(
        "--http", choices=HTTP_SERVERS, help=f"HTTP server behind nginx (default WEB_HTTP, else {HTTP_SERVERS[0]})"
    )
    args = parser.parse_args(argv)
    return serve(args.port, args.workers, args.topology, args.http)


if __name__ == "__main__":
    sys.exit(main())
