"""The dependency rule of docs/architecture.md, checked on the imports themselves:

- `scores`, the durable core, imports no other app of the project; where it must call up (the
  anti-cheat rules, the thresholds' parser) the upper app registers itself in its
  AppConfig.ready(), and what follows a commit goes out as signals;
- nothing imports the top of the stack: the player pages (`pages`) and the demo (`demo`) use
  the other apps, never the other way round, and not each other (the demo tells the login
  page about itself by registering in its AppConfig.ready());
- the apps' imports form no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
TOP = ("pages", "demo")
APPS = ("scores", "boards", "anticheat", "seasons", "monitoring", *TOP)
CODE = (*APPS, "leaderboard_project", "scripts", "bench")


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def top_app(module: str) -> str | None:
    head = module.split(".", 1)[0]
    return head if head in TOP else None


def test_nothing_imports_pages_or_demo() -> None:
    offences = []
    files = [p for folder in CODE for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 50
    for path in files:
        own = path.relative_to(ROOT).parts[0]
        for module in imported_modules(path):
            app = top_app(module)
            if app is not None and app != own:
                offences.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offences == []


def test_the_rule_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from demo.names import DEMO_SLUG\nimport pages.views\nfrom scores import demo\n")
    assert {top_app(m) for m in imported_modules(bad)} == {"demo", "pages", None}


def _app_imports() -> dict[str, dict[str, list[str]]]:
    """app -> other app it imports -> the files that do."""
    found: dict[str, dict[str, list[str]]] = {app: {} for app in APPS}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue  # migrations name other apps' tables by design
            for module in imported_modules(path):
                head = module.split(".", 1)[0]
                if head in APPS and head != app:
                    found[app].setdefault(head, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_durable_core_imports_no_other_app() -> None:
    assert _app_imports()["scores"] == {}


def test_the_apps_import_each_other_without_cycles() -> None:
    graph = {app: set(deps) for app, deps in _app_imports().items()}
    cycles = []

    def visit(app: str, path: list[str]) -> None:
        for dep in sorted(graph[app]):
            if dep in path:
                cycles.append(" -> ".join([*path[path.index(dep) :], dep]))
            else:
                visit(dep, [*path, dep])

    for app in APPS:
        visit(app, [app])
    assert cycles == [], _app_imports()


def _positional_after_first(path: Path, root: Path = ROOT) -> list[str]:
    """Public functions of a services or selectors module that take more than one argument
    by position."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("_")
        and len(node.args.posonlyargs + node.args.args) > 1
    ]


def _services_and_selectors() -> list[Path]:
    return [
        path
        for app in APPS
        for path in (ROOT / app).rglob("*.py")
        if path.stem in ("services", "selectors") or path.parent.name in ("services", "selectors")
    ]


def test_services_and_selectors_take_keywords_after_the_first_argument() -> None:
    """The HackSoft convention (docs/architecture.md): `board_top(board, window=..., offset=...)`,
    so a call says what each argument is and a new parameter cannot shift the others."""
    files = _services_and_selectors()
    assert len(files) > 8
    assert [f for path in files for f in _positional_after_first(path)] == []


def test_the_keyword_rule_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "selectors.py"
    bad.write_text("def good(a, *, b): ...\ndef bad(a, b): ...\ndef _private(a, b): ...\n")
    assert [f.split()[-1] for f in _positional_after_first(bad, tmp_path)] == ["bad"]
