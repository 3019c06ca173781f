"""The pinned requirements (docs/dev-environment.md, "Requirements"): requirements.txt is what the
service runs on and nothing of the test bench; requirements-dev.txt adds the tests and tools at the
same pins; every pin in both carries its hashes (pip installs them with --require-hashes); the code
the service runs imports nothing that requirements.txt leaves out. Reads files only: no network."""

from __future__ import annotations

import ast
import re
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNTIME, DEV = ROOT / "requirements.txt", ROOT / "requirements-dev.txt"
# what `make run` and a deployment load: the apps, the project, the scripts make run starts
RUNTIME_CODE = [
    "leaderboard_project", "scores", "boards", "seasons", "competitions", "anticheat", "monitoring",
    "pages", "demo", "rediskit", "scripts/run.py", "scripts/web.py", "scripts/services.py", "manage.py",
]  # fmt: skip
# The test bench and the tools: none of them belongs in what the service runs on.
TEST_ONLY = {
    "pytest", "pytest-django", "pytest-xdist", "pytest-cov", "coverage", "hypothesis", "schemathesis",
    "selenium", "factory-boy", "faker", "matplotlib", "numpy", "ruff", "mypy", "django-stubs",
    "djangorestframework-stubs", "werkzeug", "websocket-client", "trio",
}  # fmt: skip
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """name -> (version, its sha256 hashes), from a file pip-compile --generate-hashes wrote;
    fails on any requirement that is not a hashed == pin."""
    found: dict[str, tuple[str, frozenset[str]]] = {}
    # a requirement and its --hash options are one logical line, continued with backslashes
    for logical in re.sub(r"\\\n", " ", path.read_text()).splitlines():
        line = logical.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"{path.name}: not a pinned requirement: {line!r}"
        hashes = frozenset(re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
        assert hashes, f"{path.name}: {match.group(1)}=={match.group(3)} has no --hash"
        assert line.split()[1:] == [f"--hash=sha256:{h}" for h in re.findall(r"sha256:(\w+)", line)], line
        found[canonical(match.group(1))] = (match.group(3), hashes)
    return found


def test_every_requirement_is_pinned_with_hashes_and_nothing_is_editable() -> None:
    for path in (RUNTIME, DEV):
        assert "-e " not in path.read_text(), f"{path.name}: an editable install cannot be hash-checked"
        assert len(pins(path)) > 20


def test_the_runtime_holds_no_test_or_tool_package() -> None:
    runtime = pins(RUNTIME)
    assert not TEST_ONLY & set(runtime), sorted(TEST_ONLY & set(runtime))


def test_the_dev_list_holds_the_runtime_at_its_very_pins_and_the_test_bench() -> None:
    runtime, dev = pins(RUNTIME), pins(DEV)
    for name, (version, hashes) in runtime.items():
        assert name in dev, f"{name} missing from requirements-dev.txt"
        assert dev[name] == (version, hashes), f"{name}: {dev[name][0]} in requirements-dev.txt, {version} at runtime"
    assert {"pytest", "selenium", "hypothesis", "schemathesis", "mypy", "ruff"} <= set(dev)


def test_django_is_on_the_5_2_line_at_its_latest_patch_we_know() -> None:
    version = pins(RUNTIME)["django"][0]
    assert version.startswith("5.2.") and int(version.split(".")[2]) >= 20, version


def _imported_top_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_code_the_service_runs_imports_only_what_requirements_txt_installs() -> None:
    runtime = set(pins(RUNTIME)) | {"leaderboard-client"}  # the client: installed apart, --no-deps
    distributions = packages_distributions()
    files = [
        p
        for entry in RUNTIME_CODE
        for p in ((ROOT / entry).rglob("*.py") if (ROOT / entry).is_dir() else [ROOT / entry])
    ]
    missing: dict[str, set[str]] = {}
    for path in files:
        if "migrations" in path.parts:
            continue
        for module in _imported_top_modules(path):
            for dist in distributions.get(module, []):
                if canonical(dist) not in runtime:
                    missing.setdefault(f"{module} ({dist})", set()).add(str(path.relative_to(ROOT)))
    assert not missing, missing


@pytest.mark.parametrize("path", [RUNTIME, DEV])
def test_the_pinned_files_name_no_index_or_local_path(path: Path) -> None:
    """Written with --no-emit-index-url --no-emit-find-links: this machine's indexes stay out."""
    text = path.read_text()
    assert "--index-url" not in text and "--extra-index-url" not in text and "--find-links" not in text
