"""`make run`'s supervisor (scripts/run.py) keeps serving: a child killed -9 is named by /healthz
while it is down, started again after its backoff and counted in /metrics; the other processes
keep running; SIGINT (Ctrl-C) still stops every process it started (docs/operations.md,
"Processes").

The real supervisor on the test database and Redis (DEMO=0), every child the one `make run`
starts; a restart backoff of 3 s keeps the "down" state long enough to be seen by polling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from scripts.services import spare_port
from tests.factories import migrated_test_database_url
from tests.polling import until

pytestmark = pytest.mark.slow

CHILDREN = ("web", "projector", "worker", "webhooks", "beat")


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


@dataclass
class Run:
    proc: subprocess.Popen[bytes]
    url: str
    state_file: Path
    log: Path

    def state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())["processes"]
        except (OSError, ValueError):
            return {}

    def healthz(self) -> dict:
        status, body = _get(self.url + "/healthz")
        return json.loads(body) if status in (200, 503) else {}

    def metrics(self) -> dict[tuple[str, tuple], float]:
        status, body = _get(self.url + "/metrics")
        if status != 200:
            return {}
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode())
            for s in family.samples
        }

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def run(transactional_db, tmp_path: Path) -> Iterator[Run]:
    tmp = tmp_path
    port = spare_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard_project.settings_test",
        "DATABASE_URL": migrated_test_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "DB_POOL_MAX": "2",
        "WEB_WORKERS": "1",
        "DEMO": "0",
        "PORT": str(port),
        "RUN_RESTART_BACKOFF": "3",
        "LEADERBOARD_PROCESS_STATE": str(tmp / "processes.json"),
        "NO_COLOR": "1",
    }
    log = tmp / "run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "scripts/run.py"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    started = Run(proc, f"http://127.0.0.1:{port}", tmp / "processes.json", log)
    try:
        until(
            lambda: started.healthz().get("processes") == "ok" or proc.poll() is not None,
            "make run's processes all up",
            timeout=120,
        )
        assert proc.poll() is None, started.tail()
        yield started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_a_child_killed_is_restarted_named_while_down_and_counted_and_ctrl_c_stops_all(run: Run) -> None:
    before = run.state()
    assert set(CHILDREN) <= set(before), run.tail()
    assert run.metrics()[("leaderboard_process_restarts_total", (("process", "projector"),))] == 0

    os.killpg(before["projector"]["pid"], signal.SIGKILL)

    # while it waits out its backoff, /healthz (served by the web process, which kept running) names it
    down = until(lambda: (h := run.healthz()).get("processes", "ok") != "ok" and h, "projector reported down")
    assert down["processes"].startswith("down: projector (killed by SIGKILL"), down["processes"]
    assert down["details"]["processes"]["projector"]["up"] is False
    assert run.metrics()[("leaderboard_process_up", (("process", "projector"),))] == 0

    after = until(lambda: (s := run.state()).get("projector", {}).get("up") and s, "projector restarted", timeout=30)
    assert after["projector"]["restarts"] == 1 and after["projector"]["pid"] != before["projector"]["pid"]
    assert after["projector"]["last_exit"] == "killed by SIGKILL"
    for name in ("web", "worker", "webhooks", "beat"):  # nobody else was stopped or restarted
        assert after[name]["pid"] == before[name]["pid"] and after[name]["restarts"] == 0
    metrics = run.metrics()
    assert metrics[("leaderboard_process_restarts_total", (("process", "projector"),))] == 1
    assert metrics[("leaderboard_process_up", (("process", "projector"),))] == 1
    assert metrics[("leaderboard_process_restarts_total", (("process", "worker"),))] == 0
    # the new projector owns every lane again
    until(lambda: run.healthz().get("projector") == "ok", "the restarted projector owning its lanes")
    assert "projector exited unexpectedly (killed by SIGKILL)" in run.log.read_text()

    # Ctrl-C at the terminal reaches the supervisor: every process goes, the restarted one too
    pids = {name: p["pid"] for name, p in run.state().items()}
    os.kill(run.proc.pid, signal.SIGINT)
    assert run.proc.wait(timeout=60) == 0, run.tail()
    assert [name for name, pid in pids.items() if _group_alive(pid)] == []
    assert not run.state_file.exists()  # nothing is supervised any more
    assert _get(run.url + "/healthz")[0] == 0


def test_the_web_tier_killed_comes_back_on_its_port(run: Run) -> None:
    """scripts/web.py killed -9 leaves nginx and gunicorn in its group holding the port: the
    supervisor stops what is left of the group before it starts web again."""
    before = run.state()
    os.killpg(before["web"]["pid"], signal.SIGKILL)  # the whole group: nothing answers meanwhile
    until(lambda: run.state().get("web", {}).get("up") is False, "web seen down by the supervisor")
    until(lambda: run.healthz().get("processes") == "ok", "web restarted and every process up", timeout=90)
    state = run.state()
    assert state["web"]["restarts"] == 1 and state["projector"]["restarts"] == 0
    assert run.metrics()[("leaderboard_process_restarts_total", (("process", "web"),))] == 1
