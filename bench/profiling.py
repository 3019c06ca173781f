"""Optional sampling profiles of the server under test with py-spy (not a project dependency:
`.venv/bin/pip install py-spy`).

`cpu` samples only threads on the CPU; `wall` adds idle threads, so time spent waiting for
Postgres or Redis shows up under the call that waits. Profiles are written in py-spy's "raw"
(collapsed stacks) format, which flamegraph.pl and speedscope read, and summarised here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from bench.environment import REPO_ROOT, VENV_BIN, BenchError, log

_LINE = re.compile(r"^(?P<stack>.*) (?P<count>\d+)$")
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")


def py_spy_binary() -> str:
    found = shutil.which("py-spy", path=os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")]))
    if found is None:
        raise BenchError("--profile needs py-spy: .venv/bin/pip install py-spy (not in requirements.txt)")
    return found


def start_recording(pid: int, seconds: float, output: Path, mode: str) -> subprocess.Popen[bytes]:
    """Record `pid` and its children for `seconds` in the background."""
    cmd = [
        py_spy_binary(),
        "record",
        "--pid", str(pid),
        "--subprocesses",
        "--duration", str(max(1, round(seconds))),
        "--rate", "200",
        "--format", "raw",
        "--output", str(output),
        "--nonblocking",  # do not pause the workers: keeps the measurement honest
        "--full-filenames",  # tells project code from libraries
    ]  # fmt: skip
    if mode == "wall":
        cmd.append("--idle")
    output.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


_STDLIB = re.compile(r"/lib/python3\.\d+/(.*)$")


def _frame(frame: str, code_dir: Path) -> tuple[str, bool]:
    """`matches_submit (/repo/scores/services.py:123)` -> (`matches_submit (scores/services.py)`, True):
    the function with a short path, and whether it is the measured project's code."""
    match = _FRAME.match(frame)
    if match is None:
        return frame, False
    path = match["file"]
    root = f"{code_dir}/"
    project = path.startswith(root) and "site-packages/" not in path and not path.startswith(f"{root}bench/")
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    elif path.startswith(root):
        path = path.removeprefix(root)
    elif path.startswith(f"{REPO_ROOT}/"):
        path = path.removeprefix(f"{REPO_ROOT}/")
    elif stdlib := _STDLIB.search(path):
        path = stdlib[1]  # /usr/lib/python3.11/json/encoder.py -> json/encoder.py
    return f"{match['func']} ({path})", project


def summarise(path: Path, code_dir: Path = REPO_ROOT, top: int = 25) -> dict[str, Any]:
    """The samples, the project functions by the share of samples with them on the stack
    (inclusive) and any function by the share where it is the leaf (self)."""
    inclusive: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    total = 0
    for raw in path.read_text(errors="replace").splitlines():
        match = _LINE.match(raw)
        if match is None:
            continue
        count = int(match["count"])
        frames = [f for f in match["stack"].split(";") if not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += count
        named = [_frame(f, code_dir) for f in frames]
        leaf[named[-1][0]] += count
        for name in {name for name, project in named if project}:
            inclusive[name] += count
    share = max(total, 1)
    return {
        "samples": total,
        "inclusive": [(n, c / share) for n, c in inclusive.most_common(top)],
        "self": [(n, c / share) for n, c in leaf.most_common(top)],
    }


def finish_recording(proc: subprocess.Popen[bytes], path: Path, code_dir: Path) -> dict[str, Any]:
    """Wait for a recording started with `start_recording`, print its summary, return it for the JSON."""
    try:
        _, stderr = proc.communicate(timeout=60)
    except Exception:
        proc.kill()
        raise
    if proc.returncode != 0 or not path.exists():
        log(f"py-spy failed ({proc.returncode}): {stderr.decode(errors='replace')[-500:]}")
        return {"path": None}
    summary = summarise(path, code_dir)
    lines = [f"{summary['samples']:,} samples", "inclusive (project code):"]
    lines += [f"  {share:6.1%}  {name}" for name, share in summary["inclusive"][:15]]
    lines.append("self (leaf frames):")
    lines += [f"  {share:6.1%}  {name}" for name, share in summary["self"][:15]]
    print(f"\nprofile {path.name}\n" + "\n".join(lines) + "\n", flush=True)
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    return {"path": str(shown), **summary}
