"""Nothing imports the top of the stack: the player pages (`pages`) and the demo (`demo`) use
the other apps, never the other way round, and not each other (docs/architecture.md). The
demo tells the login page about itself by registering in its AppConfig.ready()."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
TOP = ("pages", "demo")
CODE = ("scores", "boards", "anticheat", "seasons", "leaderboard_project", "scripts", "bench", *TOP)


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
