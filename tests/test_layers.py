"""The dependency rule of docs/architecture.md, checked on the imports themselves:

- `scores`, the durable core, imports no other app of the project (nor rediskit: it never
  touches Redis); where it must call up (the anti-cheat rules, the thresholds' parser) the
  upper app registers itself in its AppConfig.ready(), and what follows a commit goes out as
  signals;
- `rediskit`, the Redis toolkit under boards/, anticheat/ and monitoring/, imports no app;
- nothing imports the top of the stack: the player pages (`pages`) and the demo (`demo`) use
  the other apps, never the other way round, and not each other (the demo tells the login
  page about itself by registering in its AppConfig.ready());
- the request side of ingest (`scores.ingest`) imports nothing of the projector
  (`scores.projection`): a submission is answered once it is durable, and applied by another
  process, the projector;
- the apps' imports form no cycle, and neither do the modules': a module that imports another
  which imports it back, at the top or inside a function, works only by the order things
  happen to load in."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
TOP = ("pages", "demo")
APPS = ("rediskit", "scores", "boards", "anticheat", "seasons", "competitions", "monitoring", *TOP)
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


def test_the_redis_toolkit_imports_no_app() -> None:
    assert _app_imports()["rediskit"] == {}


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


# --- module cycles ---------------------------------------------------------------------------


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:`: imports for annotations, never run."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }


def _own_tasks_inside_a_function(module: str, target: str, *, in_function: bool) -> bool:
    """The Celery idiom: code a task runs queues that task again (`from boards.tasks import
    live_flush` inside the function that schedules it). The tasks module is the entry point
    Celery imports; the reverse import runs only once both are loaded."""
    return in_function and target == f"{module.split('.', 1)[0]}.tasks"


def module_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """module -> the project modules it imports, at the top or inside functions (`from a import
    b` counts as importing module a.b where that is a module, else a)."""
    paths = {
        _module_name(p, root): p
        for package in packages
        for p in (root / package).rglob("*.py")
        if "migrations" not in p.parts
    }
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skipped = _type_checking_only(tree)
        inside = {
            id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(f)
        }
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            deps.update(
                target
                for target in targets
                if target in paths
                and target != module
                and not _own_tasks_inside_a_function(module, target, in_function=id(node) in inside)
            )
        graph[module] = deps
    return graph


def module_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    """boards.selectors <-> boards.sharded, scores.cutoffs <-> scores.projection and their
    like: the shared part moves below both (boards/types.py, scores/outbox.py, scores/locks.py)."""
    graph = module_graph(ROOT, (*APPS, "leaderboard_project"))
    assert len(graph) > 100
    assert module_cycles(graph) == []


def test_the_cycle_rule_can_fail(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "sub").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "sub" / "__init__.py").write_text("")
    (app / "a.py").write_text("from app.sub import b\n")
    (app / "sub" / "b.py").write_text("def f():\n    from app import a\n")  # inside a function: still a cycle
    (app / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app import a\n")
    (app / "tasks.py").write_text("from app import d\n")
    (app / "d.py").write_text("def later():\n    from app.tasks import t\n")  # the Celery idiom
    assert module_cycles(module_graph(tmp_path, ("app",))) == [["app.a", "app.sub.b"]]


# --- the request side of ingest and the projector ----------------------------------------------


def imports_between(graph: dict[str, set[str]], importer: str, imported: str) -> list[str]:
    """Each import by a module of package `importer` of a module of package `imported`."""

    def inside(module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    return [
        f"{module} imports {target}"
        for module in sorted(graph)
        if inside(module, importer)
        for target in sorted(graph[module])
        if inside(target, imported)
    ]


def test_the_request_side_of_ingest_imports_nothing_of_the_projector() -> None:
    graph = module_graph(ROOT, APPS)
    assert len([m for m in graph if m.startswith("scores.ingest.")]) > 5
    assert imports_between(graph, "scores.ingest", "scores.projection") == []


def test_the_ingest_rule_can_fail(tmp_path: Path) -> None:
    for package in ("scores", "scores/ingest", "scores/projection"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "scores" / "ingest" / "submit.py").write_text("def f():\n    from scores.projection import batch\n")
    (tmp_path / "scores" / "projection" / "batch.py").write_text("from scores.ingest import submit\n")
    (tmp_path / "scores" / "ingestion.py").write_text("import scores.projection\n")  # another package
    graph = module_graph(tmp_path, ("scores",))
    assert imports_between(graph, "scores.ingest", "scores.projection") == [
        "scores.ingest.submit imports scores.projection.batch"
    ]
