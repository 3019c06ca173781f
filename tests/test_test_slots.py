"""Two test runs on one machine (two checkouts, or CI beside a developer) must not share the
test database or the Redis db they create, flush and drop: each `exec --for-tests` holds a slot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_a_second_concurrent_test_run_gets_its_own_database_and_redis_db() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TEST_DATABASE_NAME", "TEST_REDIS_URL")}
    services = [sys.executable, str(REPO_ROOT / "scripts" / "services.py")]
    # the outer run holds its slot while the inner one, started meanwhile, prints its settings
    inner = " ".join([*services, "env", "--for-tests"])
    done = subprocess.run(
        [
            *services,
            "exec",
            "--for-tests",
            "--",
            "sh",
            "-c",
            f'echo "outer $REDIS_URL ${{TEST_DATABASE_NAME:-}}"; {inner}',
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    outer = lines[0].split()
    exports = dict(line.removeprefix("export ").split("=", 1) for line in lines[1:] if line.startswith("export "))
    inner_redis = exports["REDIS_URL"].strip("'")
    assert inner_redis != outer[1]
    assert exports.get("TEST_DATABASE_NAME", "").strip("'") not in ("", outer[2] if len(outer) > 2 else "")
