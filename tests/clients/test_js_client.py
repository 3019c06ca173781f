"""The JavaScript client (clients/js/, docs/clients.md) against the real served service
(tests/clients/conftest.py): `npm test` there compiles it with TypeScript and runs its suite
with node's test runner. `make test` installs its dev dependencies first (make jsclient)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.clients.conftest import JS_PACKAGE

pytestmark = pytest.mark.slow


def test_the_js_client_suite_passes(served: dict[str, str]) -> None:
    npm = shutil.which("npm")
    if npm is None or not (JS_PACKAGE / "node_modules" / "typescript").exists():
        pytest.fail(f"npm and {JS_PACKAGE}/node_modules are needed: `make test` installs them (make jsclient)")
    run = subprocess.run(
        [npm, "test", "--silent"], cwd=JS_PACKAGE, env=served, capture_output=True, text=True, timeout=600
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    counts = {k: int(v) for k, v in re.findall(r"^# (pass|fail|skipped|cancelled) (\d+)$", out, re.M)}
    assert counts.get("pass", 0) >= 14 and counts.get("fail") == 0 and counts.get("skipped") == 0, out[-3000:]
