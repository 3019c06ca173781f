#!/usr/bin/env bash
# The test suite on a clock moved by OFFSET, to check that no test depends on today's date
# (docs/dev-environment.md, "Tests and the calendar"):
#
#   LIBFAKETIME=/path/to/libfaketime.so.1 scripts/suite_at_offset.sh +730d [pytest args]
#
# Runs from a fresh clone of HEAD in a temporary directory, with a Postgres of its own started
# under the moved clock. It needs a libfaketime under which Python's timed waits return: Debian
# 12's 0.9.10 hangs every `Lock.acquire(timeout=...)`; 0.9.12 and newer do not. redis-server and
# redis-cli deadlock at start under any libfaketime (jemalloc), so they run on the real clock
# through the wrappers below: only EXPIREAT compares with Redis' own clock.
set -euo pipefail
offset=${1:?usage: LIBFAKETIME=... $0 +730d [pytest args]}
shift
lib=${LIBFAKETIME:?LIBFAKETIME: the path of a libfaketime.so.1, 0.9.12 or newer}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
git clone -q "$repo" "$work/repo"
cd "$work/repo"
ln -s "$repo/.venv" .venv
# The clone's requirements.txt is newer than the shared virtualenv's install stamp: a `make` that a
# test runs would reinstall and stamp it with the moved clock (make would then never reinstall).
touch -r "$repo/.venv/.installed" requirements.txt requirements-dev.txt
for deps in tests/e2e/node_modules clients/js/node_modules; do
  if [ -e "$repo/$deps" ]; then ln -s "$repo/$deps" "$deps"; fi
done
make -s axe jsclient # the npm packages the browser and client tests load, where the checkout has none
mkdir "$work/bin"
for tool in redis-server redis-cli; do
  real=$(command -v "$tool")
  printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "$real" >"$work/bin/$tool"
  chmod +x "$work/bin/$tool"
done
export PATH="$work/bin:$PATH" LEADERBOARD_IGNORE_LOCAL_SERVICES=1
export LEADERBOARD_LOCAL_PG_PORT=${LEADERBOARD_LOCAL_PG_PORT:-55470} LEADERBOARD_LOCAL_CLUSTER_PORT=${LEADERBOARD_LOCAL_CLUSTER_PORT:-47301}
status=0
FAKETIME=$offset LD_PRELOAD=$lib .venv/bin/python scripts/services.py exec --for-tests -- \
  .venv/bin/pytest -q -p no:randomly "${@:---ignore=tests/bench}" || status=$?
.venv/bin/python scripts/services.py stop >/dev/null
echo "suite at $offset: exit $status (clone kept in $work/repo)"
exit "$status"
