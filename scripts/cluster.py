"""A project-local Redis Cluster for the ranking index (docs/architecture.md, "The ranking index
on a Redis Cluster"): 3 masters and 3 replicas on
free loopback ports, data under ``.local/cluster/``, started from the installed
``redis-server --cluster-enabled yes`` and joined with ``redis-cli --cluster create
--cluster-replicas 1``. A cluster left running by an earlier invocation is reused.

Standard library only (scripts/services.py imports it). Nothing is kept on disk but the
nodes' cluster configuration: like the single Redis, it is an index rebuilt from Postgres.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from scripts import services as base

CLUSTER_DIR = base.LOCAL_DIR / "cluster"
PORTS_FILE = CLUSTER_DIR / "ports"
FIRST_PORT = int(os.environ.get("LEADERBOARD_LOCAL_CLUSTER_PORT", "21001"))
NODES = 6  # 3 masters + 3 replicas
# Short, so a killed primary is replaced within a few seconds (fault tests, bench/cluster.py)
NODE_TIMEOUT_MS = 2000


def redis_cli_binary() -> str | None:
    found = shutil.which("redis-cli")
    if found:
        return found
    server = base.redis_server_binary()
    candidate = Path(server).with_name("redis-cli") if server else None
    return str(candidate) if candidate and os.access(candidate, os.X_OK) else None


def node_dir(port: int) -> Path:
    return CLUSTER_DIR / str(port)


def node_pid(port: int) -> int | None:
    pid = base._read_pid(node_dir(port) / "redis.pid")
    return pid if pid is not None and base._pid_alive(pid, "redis") else None


def cluster_ports() -> list[int]:
    try:
        return [int(p) for p in PORTS_FILE.read_text().split()]
    except (OSError, ValueError):
        return []


def _cli(port: int, *args: str, timeout: float = 10) -> str:
    cli = redis_cli_binary()
    if cli is None:
        raise base.ServiceError("redis-cli not found (it comes with redis-server: sudo apt-get install redis-tools)")
    proc = subprocess.run(
        [cli, "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True, text=True, timeout=timeout
    )
    return proc.stdout + proc.stderr


def cluster_state(port: int) -> str:
    for line in _cli(port, "cluster", "info").splitlines():
        if line.startswith("cluster_state:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def ready(port: int) -> bool:
    """The node sees the cluster as ok and, if it is a replica, has finished its first sync:
    until then reads sent to replicas would all land on the primaries."""
    if cluster_state(port) != "ok":
        return False
    info = dict(line.split(":", 1) for line in _cli(port, "info", "replication").split() if ":" in line)
    return info.get("role") != "slave" or info.get("master_link_status") == "up"


def _running() -> list[int] | None:
    ports = cluster_ports()
    if len(ports) != NODES or any(node_pid(p) is None for p in ports):
        return None
    if any(base.probe_redis("127.0.0.1", p) != "ok" for p in ports):
        return None
    return ports if cluster_state(ports[0]) == "ok" else None


def start_node(port: int) -> None:
    """Start (or restart, after a fault test killed it) the node of one port."""
    binary = base.redis_server_binary()
    if binary is None:
        raise base.ServiceError("redis-server not found")
    d = node_dir(port)
    d.mkdir(parents=True, exist_ok=True)
    conf = d / "redis.conf"
    q = base._conf_quote
    conf.write_text(
        "# project-local Redis Cluster node (scripts/cluster.py); rewritten at each start\n"
        f"bind 127.0.0.1\nport {port}\nprotected-mode yes\n"
        'save ""\nappendonly no\n'
        f"cluster-enabled yes\ncluster-config-file {q(d / 'nodes.conf')}\n"
        f"cluster-node-timeout {NODE_TIMEOUT_MS}\n"
        # the other masters keep serving their slots while one fails over
        "cluster-require-full-coverage no\n"
        f"daemonize yes\npidfile {q(d / 'redis.pid')}\nlogfile {q(d / 'redis.log')}\ndir {q(d)}\n"
    )
    (d / "redis.pid").unlink(missing_ok=True)
    base._run([binary, str(conf)], "redis-server (cluster node)")
    deadline = time.monotonic() + 15
    while base.probe_redis("127.0.0.1", port) != "ok":
        if time.monotonic() > deadline:
            raise base.ServiceError(f"cluster node {port} did not answer PING\n{base._tail(d / 'redis.log')}")
        time.sleep(0.1)


def stop_cluster() -> None:
    for port in cluster_ports():
        pid = node_pid(port)
        if pid is None:
            continue
        base.log(f"stopping project-local cluster node {port} (pid {pid})")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while base._pid_alive(pid, "redis"):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)


def ensure_cluster() -> str:
    """The URL of a node of the project-local cluster, started if it is not running."""
    ports = _running()
    if ports is not None:
        base.log(f"redis cluster: reusing project-local cluster on 127.0.0.1:{ports[0]}..{ports[-1]}")
        return f"redis://127.0.0.1:{ports[0]}/0"
    stop_cluster()
    shutil.rmtree(CLUSTER_DIR, ignore_errors=True)  # stale nodes.conf files would not join again
    CLUSTER_DIR.mkdir(parents=True, exist_ok=True)
    ports = []
    port = FIRST_PORT
    while len(ports) < NODES:
        if port > FIRST_PORT + 200:
            raise base.ServiceError(f"no {NODES} free ports in {FIRST_PORT}-{FIRST_PORT + 200}")
        if base.port_free(port) and base.port_free(port + 10000):  # +10000: the cluster bus
            ports.append(port)
        port += 1
    PORTS_FILE.write_text(" ".join(map(str, ports)) + "\n")
    base.log(f"redis cluster: starting {NODES} nodes on 127.0.0.1 ports {ports}")
    for p in ports:
        start_node(p)
    out = _cli(
        ports[0],
        "--cluster",
        "create",
        *[f"127.0.0.1:{p}" for p in ports],
        "--cluster-replicas",
        "1",
        "--cluster-yes",
        timeout=60,
    )
    deadline = time.monotonic() + 30
    while not all(ready(p) for p in ports):
        if time.monotonic() > deadline:
            raise base.ServiceError(f"the local Redis Cluster did not become ready:\n{out[-2000:]}")
        time.sleep(0.2)
    return f"redis://127.0.0.1:{ports[0]}/0"
