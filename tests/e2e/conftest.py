"""End-to-end fixtures: the web tier exactly as `make run` starts it (scripts/web.py: nginx in
front of gunicorn for HTTP and uvicorn with the Channels ASGI application for /ws/; uvicorn
alone where nginx is missing) in a subprocess on a free port, against the test database and
test Redis; a headless Debian chromium driven by
Selenium (chromedriver and the browser at fixed paths: nothing is ever downloaded)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from leaderboard_project.celery import app as celery_app
from scripts.services import spare_port
from tests.factories import migrated_test_database_url
from tests.polling import until
from tests.projector import REPO, process_env, processes_stop

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"  # git-ignored
READY_SECONDS = 60.0


class WebServer:
    """scripts/web.py on a fixed free port, so that a restart comes back at the same address.
    Stopping it (SIGTERM) stops the servers it started."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = spare_port()
        self.env = env
        self.log = Path(tempfile.gettempdir()) / f"leaderboard-e2e-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        # the nginx topology by name: where nginx is missing the test fails, it never quietly
        # runs on uvicorn alone
        cmd = [sys.executable, "scripts/web.py", "--port", str(self.port), "--workers", "2", "--topology", "nginx"]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=settings.BASE_DIR, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"the web tier exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the web tier did not answer /healthz within {READY_SECONDS:.0f} s:\n{self.log_tail()}")
            time.sleep(0.1)  # polling a subprocess's readiness, with a deadline

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc = None

    def log_tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return ""


def _web(settings_module: str) -> Iterator[WebServer]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings_module,
        "DATABASE_URL": migrated_test_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "DB_POOL_MAX": "4",
        "PYTHONUNBUFFERED": "1",
    }
    server = WebServer(env)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def live_flushes(django_db_setup) -> Iterator[None]:
    """A Celery worker beside the module's served pages, as under `make run`: it runs the trailing
    edge of live updates the projector queues (docs/live.md), so a change held back by the
    once-a-second limit reaches an open page the way it does in production."""
    with celery_worker():
        yield


@pytest.fixture
def web_tier(transactional_db) -> Iterator[WebServer]:
    """The web tier alone, for a test that starts what runs beside it itself."""
    yield from _web("leaderboard_project.settings_test")


@pytest.fixture
def web(transactional_db, live_flushes) -> Iterator[WebServer]:
    """The web tier, with the Celery worker of the module beside it."""
    yield from _web("leaderboard_project.settings_test")


@pytest.fixture
def web_with_bugs(transactional_db) -> Iterator[WebServer]:
    """The web tier with two routes that raise (tests/e2e/settings_errors.py)."""
    yield from _web("tests.e2e.settings_errors")


WORKER_READY_SECONDS = 60.0  # a cold start on a busy 2-core machine; ready took ~4 s here


@contextlib.contextmanager
def celery_worker() -> Iterator[subprocess.Popen]:
    """`celery -A leaderboard_project worker` as scripts/run.py starts it, on the test database
    and the test Redis (its broker too: the projector beside the test queues there), answering
    before the tests start: a live_flush queued with a countdown expires 5 s after it is due,
    so one queued while no worker listens would be lost. One process (`--pool solo`): its tasks
    here are short, and the machine is shared."""
    # the test process's settings as they are, but its own way of running the checks: none here
    env = {**process_env(settings, "leaderboard-celery-under-test"), "ANTICHEAT_ASYNC_CHECKS": "0"}
    name = f"tests-{os.getpid()}@localhost"  # its own: the readiness ping asks it alone
    with tempfile.NamedTemporaryFile(prefix="leaderboard-tests-worker-", suffix=".log", delete=False) as log:
        log_path = Path(log.name)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "leaderboard_project", "worker", "--pool", "solo",
             "--hostname", name, "--loglevel", "WARNING"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:

        def answers() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"the Celery worker exited with {proc.returncode}:\n{_tail(log_path)}")
            return bool(celery_app.control.ping(destination=[name], timeout=0.5))

        until(answers, "the Celery worker answering a ping", timeout=WORKER_READY_SECONDS, every=0.1)
        yield proc
        assert proc.poll() is None, f"the Celery worker exited with {proc.returncode}:\n{_tail(log_path)}"
    finally:
        processes_stop([proc])
        log_path.unlink(missing_ok=True)


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-30:])
    return ""


# Every request to another host goes to a closed local port: the page must do without internet
# (Chromium sends loopback addresses directly, past the proxy).
NO_INTERNET = ("--proxy-server=http://127.0.0.1:9",)


def _chrome(width: int, height: int, javascript: bool = True, mobile: bool = False, offline: bool = False):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail(
            f"{CHROMIUM} and {CHROMEDRIVER} are needed: `make test` installs them (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        *(NO_INTERNET if offline else ()),
    ):
        options.add_argument(arg)
    if mobile:  # a desktop window cannot be narrower than 500 px: emulate the phone's screen
        options.add_experimental_option(
            "mobileEmulation", {"deviceMetrics": {"width": width, "height": height, "pixelRatio": 2.0}}
        )
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, for csp_violations()
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


# A load from another host that the policy blocked: the policy doing its job (the pages must do
# without internet anyway; ReDoc's sidebar links its logo from its makers' site)
_OUTSIDE_LOAD = re.compile(r"Loading the \w+ 'https?://(?!127\.0\.0\.1|localhost)")


def csp_violations(driver) -> list[str]:  # noqa: ANN001
    """What the page's console said the Content-Security-Policy blocked (leaderboard_project/security.py),
    but loads from other hosts."""
    messages = [e.get("message", "") for e in driver.get_log("browser")]
    return [m for m in messages if "Content Security Policy" in m and not _OUTSIDE_LOAD.search(m)]


# Each kind of browser starts once per test process (a Chromium start costs a second or two of
# both cores) and is lent to one test at a time, emptied in between: no cookie (cookies ignore
# ports, so one test's session would reach the next test's server), no cache, no page, no
# console message of the test before. Every test's server has a port of its own, so storage
# kept per origin is never seen again.
_KINDS: dict[str, dict] = {  # _chrome's arguments
    "browser": {"width": 1280, "height": 900},
    "offline_browser": {"width": 1280, "height": 900, "offline": True},
    "phone": {"width": 390, "height": 844, "mobile": True},
    "browser_without_js": {"width": 1280, "height": 900, "javascript": False},
}


@pytest.fixture(scope="session")
def _browsers() -> Iterator[dict]:
    started: dict = {}
    yield started
    for driver in started.values():
        with contextlib.suppress(Exception):
            driver.quit()


def _lend(started: dict, kind: str) -> Iterator:
    """The kind's browser, emptied; afterwards, the check every browser test makes: the policy
    blocked nothing its pages needed."""
    driver = started.get(kind)
    try:
        if driver is not None:
            driver.get("about:blank")
    except Exception:  # a test left it broken: start another
        with contextlib.suppress(Exception):
            driver.quit()
        driver = None
    if driver is None:
        driver = started[kind] = _chrome(**_KINDS[kind])
        driver.set_page_load_timeout(30)
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.get_log("browser")  # the console so far: another test's
    yield driver
    blocked = csp_violations(driver)
    assert not blocked, f"the Content-Security-Policy blocked: {blocked}"


@pytest.fixture
def browser(_browsers: dict) -> Iterator:
    yield from _lend(_browsers, "browser")


@pytest.fixture
def offline_browser(_browsers: dict) -> Iterator:
    """A desktop window that cannot reach anything but this machine."""
    yield from _lend(_browsers, "offline_browser")


@pytest.fixture
def phone(_browsers: dict) -> Iterator:
    """A phone-sized window (390 x 844 CSS pixels, an iPhone 12-14)."""
    yield from _lend(_browsers, "phone")


@pytest.fixture
def browser_without_js(_browsers: dict) -> Iterator:
    yield from _lend(_browsers, "browser_without_js")


AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(driver, impacts: tuple[str, ...] = ("serious", "critical")) -> list[dict]:
    """Run axe-core (the npm package, `make axe`) in the page; its violations of these impacts."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: `make test` installs it (make axe: npm ci --prefix tests/e2e)")
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations), e => done(String(e)));"
    )
    assert isinstance(result, list), result
    return [
        {"id": v["id"], "impact": v["impact"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result
        if v["impact"] in impacts
    ]


def screenshot(driver, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
