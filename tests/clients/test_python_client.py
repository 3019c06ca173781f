"""The game servers' client (clients/python/, docs/clients.md) against the real served service:
the web tier `make run` starts (scripts/web.py: nginx, gunicorn, uvicorn) on the test database
and Redis, with the client's game (clients/python/tests/game.toml) and a server key. The
client's own test suite runs in a subprocess against it, once in this virtualenv (the editable
install make makes beside requirements.txt) and once in a clean virtualenv where only the built wheel and
pytest are installed.

The service, with the projector and a Celery worker beside it: tests/clients/conftest.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.conftest import PYTHON_PACKAGE as PACKAGE

pytestmark = pytest.mark.slow

SUITE_SECONDS = 600


def _suite(python: str, env: dict[str, str]) -> str:
    """Run the client's tests with this interpreter; their output. Fails on any failure or skip."""
    run = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django", "tests"],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUITE_SECONDS,
    )
    out = run.stdout + run.stderr
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    assert run.returncode == 0, out[-6000:]
    assert re.search(r"\d+ passed", summary) and "skipped" not in summary and "failed" not in summary, out[-3000:]
    return summary


def test_the_client_suite_passes_in_this_virtualenv(served: dict[str, str]) -> None:
    summary = _suite(sys.executable, served)
    assert int(re.search(r"(\d+) passed", summary).group(1)) >= 25, summary


def test_the_wheel_builds_installs_in_a_clean_virtualenv_and_passes_there(served, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # the package and what a clean environment needs for it and its tests, as wheels
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "-w", str(wheels), str(PACKAGE),
         "pytest"],
        check=True, timeout=SUITE_SECONDS,
    )  # fmt: skip
    built = [w.name for w in wheels.glob("leaderboard_client-*.whl")]
    assert len(built) == 1, built
    venv = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--find-links",
         str(wheels), "leaderboard-client", "pytest"],
        check=True, timeout=SUITE_SECONDS,
    )  # fmt: skip
    where = subprocess.run(
        [python, "-c", "import leaderboard_client, importlib.util; print(leaderboard_client.__file__);"
         "print(importlib.util.find_spec('django') is None)"],
        cwd=tmp_path, check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert where[0].startswith(str(venv)) and where[1] == "True"  # the wheel's copy, and no Django
    _suite(python, served)
