"""Settings for the test suite: the real services, but a Redis database of its own (tests
flush it) unless REDIS_URL says otherwise."""

import os
import secrets

os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
# The suite reads boards and pages from one address (127.0.0.1) thousands of times a minute:
# the public read and websocket limits per address are raised here, in the environment so the
# servers a test starts (scripts/web.py's nginx too) inherit them. Tests of those limits set
# their own (tests/test_read_limits.py).
os.environ.setdefault("THROTTLE_PUBLIC_READS", "100000000/min")
os.environ.setdefault("THROTTLE_WEBSOCKETS", "100000000/min")
# Three test workers, their projectors and the servers they start share 2 cores with Postgres and
# Redis: under that load a Redis answer can take longer than production's 0.2 s, and a breaker
# tripped by the machine's load (rediskit/breaker.py) would fail tests about something else. The
# fault suite's stacks set production's value again (bench/faults.py SERVICE_ENV).
os.environ.setdefault("REDIS_SOCKET_TIMEOUT", "0.5")
# Under pytest-xdist each worker has a Redis db of its own (scripts/services.py TEST_REDIS_DBS;
# pytest-django gives it a database of its own). Written back to the environment, and the list
# dropped from it, so that the servers a test starts inherit the worker's db as it is.
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("TEST_REDIS_DBS"):
    from scripts.services import with_redis_db

    _worker = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
    _dbs = os.environ.pop("TEST_REDIS_DBS").split(",")
    if _worker >= len(_dbs):
        raise RuntimeError(f"at most {len(_dbs)} pytest-xdist workers per test run (scripts/services.py TEST_WORKERS)")
    os.environ["REDIS_URL"] = with_redis_db(os.environ["REDIS_URL"], int(_dbs[_worker]))
# Random per test run (inherited by the servers the suite starts): no published secret serves
# even a test, and DEBUG stays off as in production.
os.environ.setdefault("SECRET_KEY", "test-" + secrets.token_urlsafe(40))
os.environ.setdefault("SERVER_KEY_PEPPER", "test-pepper-" + secrets.token_urlsafe(40))

from leaderboard_project.settings import *  # noqa: E402, F403

# No admission control unless a test turns it on (tests/scores/test_admission.py): many tests
# build a projector backlog on purpose, with no projector running, and submit on top of it.
ADMISSION_MAX_LAG_MS = float(os.environ.get("ADMISSION_MAX_LAG_MS", "0"))

# Another checkout's test run on this machine holds the plain test database
# (scripts/services.py gives each concurrent run a slot of its own).
if os.environ.get("TEST_DATABASE_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["TEST_DATABASE_NAME"]}  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed only; never in production

# Live updates on the test Redis database. Pub/sub channels ignore databases: the prefix names
# the database, so test runs on other databases never receive these messages.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": f"test.channels.db{REDIS_DB}."},  # noqa: F405
    }
}
