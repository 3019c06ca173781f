# Developer entry points; docs/dev-environment.md explains what they find or start.
#
#   make run                      the whole service in the foreground (PORT=8000, DEMO=0 skips the demo)
#   make test [PYTEST_ARGS=...]   ruff (lint and format), mypy (scripts/typecheck.py), then the test suite (coverage report at the end) against a real PostgreSQL and Redis
#                                 (nginx for the edge cache, headless chromium for tests/e2e: installed as root if missing)
#   make manage ARGS="..."        a manage.py command in the same environment as `make run`
#   make lint                     ruff check + ruff format --check
#   make bench [ARGS=...]         the benchmark suite at 1M players (< 15 min), results in bench/results/
#                                 and docs/BENCHMARKS.md; ARGS="--players 10000000", "--smoke", see bench/README.md
#   make faults [ARGS=...]        the fault suite: Redis killed/hung, Postgres stopped, worker killed, Redis killed
#                                 under `make run`'s own supervisor, the primary killed (failover to its synchronous
#                                 standby) under signed load, on servers it starts under .local/faults/
#                                 (bench/faults.py; exit 1 on a loss, or under make run: not healed, a process down)
#   make clean-local              stop the project-local PostgreSQL/Redis and delete .local/
#
# DATABASE_URL, REDIS_URL, TEST_REDIS_URL, PORT and DEMO are read from the environment
# (or the make command line, e.g. `make run PORT=8001`).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_PY := $(VENV)/bin/python
# Touched after a successful install: a requirements file newer than its stamp means reinstall.
# requirements.txt is what the service runs on; requirements-dev.txt adds the tests and tools
# (both pinned with hashes by pip-compile: docs/dev-environment.md, "Requirements").
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
SERVICES := $(VENV_PY) scripts/services.py
# pytest-xdist workers for `make test` (at most scripts/services.py TEST_WORKERS): three keep both
# cores busy while one worker waits on a server it started (docs/dev-environment.md, "Test tiers, workers and the fast loop")
TEST_WORKERS ?= 3

.PHONY: run test test-deep manage lint bench faults clean-local venv venv-dev browser nginx axe jsclient
.DEFAULT_GOAL := run

venv: $(STAMP)
venv-dev: $(DEV_STAMP)

# `python3 -m venv` fails on Debian/Ubuntu without python3-venv (no ensurepip), leaving a
# half-made .venv behind: remove it, and as root install the package and try again.
$(VENV)/bin/pip:
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found: sudo apt-get install python3 python3-venv" >&2; exit 1; }
	@echo "==> creating the virtualenv in $(VENV)/" >&2
	@if ! $(PYTHON) -m venv $(VENV) >&2; then \
	  rm -rf $(VENV); \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "==> '$(PYTHON) -m venv' failed: installing python3-venv with apt-get" >&2; \
	    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv \
	      && $(PYTHON) -m venv $(VENV); } >&2 || { rm -rf $(VENV); echo "error: could not create $(VENV)/" >&2; exit 1; }; \
	  else \
	    echo "error: '$(PYTHON) -m venv' failed; install venv support and retry: sudo apt-get install python3-venv" >&2; \
	    exit 1; \
	  fi; \
	fi

# Progress goes to stderr: `make manage` prints only the command's own output on stdout.
# Every download is checked against its pinned hash (--require-hashes). The game servers' client
# (clients/python: the demo traffic signs with it, the tests run its suite) is installed editable
# in a call of its own: an editable install cannot be hash-checked, and --no-deps keeps it from
# pulling anything the pinned files do not name.
$(STAMP): requirements.txt | $(VENV)/bin/pip
	@echo "==> installing requirements.txt into $(VENV)/" >&2
	@$(VENV)/bin/pip install --disable-pip-version-check -q --require-hashes -r requirements.txt >&2
	@$(VENV)/bin/pip install --disable-pip-version-check -q --no-deps -e clients/python >&2
	@touch $@

# requirements-dev.txt holds requirements.txt's pins too: once it is in, so is the runtime.
$(DEV_STAMP): requirements-dev.txt requirements.txt | $(VENV)/bin/pip
	@echo "==> installing requirements-dev.txt into $(VENV)/" >&2
	@$(VENV)/bin/pip install --disable-pip-version-check -q --require-hashes -r requirements-dev.txt >&2
	@$(VENV)/bin/pip install --disable-pip-version-check -q --no-deps -e clients/python >&2
	@touch $@ $(STAMP)

run: venv
	$(VENV_PY) scripts/run.py

test: venv-dev browser nginx axe jsclient
	@echo "==> ruff check ."; $(VENV)/bin/ruff check .
	@echo "==> ruff format --check ."; $(VENV)/bin/ruff format --check .
	@echo "==> mypy against its baseline (scripts/typecheck.py)"; $(VENV_PY) scripts/typecheck.py
	$(SERVICES) exec --for-tests -- $(VENV)/bin/pytest -n $(TEST_WORKERS) --durations=25 --cov --cov-report=term $(PYTEST_ARGS)

# The whole suite with the property tests at their deep sizes (tests/properties.py): for a change
# to the projector, the reads, the windows or the reference model (docs/dev-environment.md).
test-deep: venv-dev browser nginx axe jsclient
	PROPERTY_DEPTH=deep $(SERVICES) exec --for-tests -- $(VENV)/bin/pytest -n $(TEST_WORKERS) --durations=25 $(PYTEST_ARGS)

# The browser tests (tests/e2e/) drive Debian's chromium through chromedriver at these paths;
# nothing downloads a browser. Present: nothing to do; root with apt-get: install; else say what.
BROWSER := /usr/bin/chromium
BROWSER_DRIVER := /usr/bin/chromedriver
browser:
	@if [ -x $(BROWSER) ] && [ -x $(BROWSER_DRIVER) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "==> installing chromium and chromium-driver with apt-get (for the browser tests)"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver \
	    || { echo "error: could not install chromium chromium-driver" >&2; exit 1; }; \
	else \
	  echo "error: the browser tests need $(BROWSER) and $(BROWSER_DRIVER): sudo apt-get install chromium chromium-driver" >&2; \
	  exit 1; \
	fi

# nginx for the tests of the edge cache and the stack `make run` serves (tests/boards/test_edge_cache.py,
# tests/e2e/): found, or installed as root with apt-get by scripts/web.py, the same way `make run` gets
# it. Without it those tests would fail (they never skip, nor run on uvicorn alone): say so first.
nginx:
	@$(PYTHON) -c 'import sys; sys.path.insert(0, "scripts"); import web; sys.exit(web.find_nginx() is None)' \
	  || { echo "error: the tests of the nginx stack need nginx: sudo apt-get install nginx-light" >&2; exit 1; }

# axe-core (the npm package) for the accessibility browser test, from tests/e2e/package-lock.json.
AXE := tests/e2e/node_modules/axe-core/axe.min.js
axe:
	@if [ -f $(AXE) ]; then :; \
	elif command -v npm >/dev/null; then \
	  echo "==> installing axe-core with npm (for the accessibility test)"; \
	  npm ci --prefix tests/e2e --no-audit --no-fund -q || { echo "error: npm ci in tests/e2e failed" >&2; exit 1; }; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "==> installing npm with apt-get, then axe-core (for the accessibility test)"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm \
	    && npm ci --prefix tests/e2e --no-audit --no-fund -q || { echo "error: could not install axe-core" >&2; exit 1; }; \
	else \
	  echo "error: the accessibility test needs npm to install axe-core: sudo apt-get install npm" >&2; \
	  exit 1; \
	fi

# The JavaScript client's dev dependencies (TypeScript), from clients/js/package-lock.json (after axe, which
# installs npm where it is missing).
JSCLIENT := clients/js/node_modules/typescript
jsclient: axe
	@if [ -f $(JSCLIENT)/package.json ]; then :; \
	else \
	  echo "==> installing the JavaScript client's dev dependencies with npm (for its tests)"; \
	  npm ci --prefix clients/js --no-audit --no-fund -q || { echo "error: npm ci in clients/js failed" >&2; exit 1; }; \
	fi

# Not echoed: stdout is the command's own (`make manage ARGS="create_server_key ..." | jq .secret`).
manage: venv
	@$(SERVICES) exec -- $(VENV_PY) manage.py $(ARGS)

lint: venv-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Finds or starts PostgreSQL and Redis itself (scripts/services.py), in a database and Redis db of its own.
bench: venv-dev
	$(VENV_PY) -m bench --publish $(ARGS)

# Starts its own PostgreSQL and Redis under .local/faults/ (never the shared ones) and breaks them.
faults: venv-dev
	$(VENV_PY) -m bench.faults $(ARGS)

# Standard library only: works without the virtualenv.
clean-local:
	$(PYTHON) scripts/services.py clean
