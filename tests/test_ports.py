"""The ports the project's own servers listen on lie outside the kernel's ephemeral range
(scripts/services.py, LOCAL_PG_PORT; docs/dev-environment.md): a client polling such a port
while its server is starting or stopped by a fault test could otherwise be given that port as its
own source and connect to itself."""

from __future__ import annotations

from bench import faults
from scripts import cluster, ha, services


def test_every_port_a_project_server_listens_on_is_outside_the_ephemeral_range() -> None:
    ephemeral = services.ephemeral_ports()
    chosen = {
        "local postgres": services.LOCAL_PG_PORT,
        "local redis": services.LOCAL_REDIS_PORT,
        "ha monitor": ha.FIRST_PORT,
        "cluster node": cluster.FIRST_PORT,
        "cluster bus": cluster.FIRST_PORT + 10000,
        "faults postgres": faults.PG_PORT,
        "faults redis": faults.REDIS_PORT,
        "faults web": faults.WEB_PORT,
        "faults web, HA": faults.HA_WEB_PORT,
        "faults HA monitor": ha.FIRST_PORT + 200,
        **{f"spare {i}": services.spare_port() for i in range(20)},
    }
    inside = {name: port for name, port in chosen.items() if port in ephemeral}
    assert inside == {}, f"in {ephemeral.start}-{ephemeral.stop - 1}: {inside}"
    assert all(services.port_free(port) for name, port in chosen.items() if name.startswith("spare"))
