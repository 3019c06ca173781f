"""Which code a benchmark measures (`--code`), and the run every benchmark shares.

By default the working tree the bench lives in, as it is on disk (others may be editing it:
the results then record which files differ from the commit). With ``--code REV`` a clean
export of that git revision (``git archive``, the repository is only read) into a temporary
directory, removed afterwards; with ``--code DIR`` another checkout. The benchmark code itself
(bench/) always comes from this checkout, so one bench can measure several revisions."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.environment import REPO_ROOT, BenchError, bench_environment, log


@dataclass(frozen=True)
class CodeTree:
    path: Path
    info: dict[str, Any]  # source, commit, and for a working tree what differs from it


def _git(cwd: Path, *args: str) -> str | None:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _working_tree(path: Path) -> CodeTree:
    commit = _git(path, "rev-parse", "HEAD")
    status = _git(path, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)bench") or ""
    modified = [line[3:] for line in status.splitlines() if line.strip()]
    info = {"source": "working tree", "path": str(path), "commit": commit, "dirty": bool(modified)}
    if modified:
        info["modified"] = modified
    return CodeTree(path, info)


@contextlib.contextmanager
def code_tree(spec: str | None) -> Iterator[CodeTree]:
    """`None`: this working tree; a directory: that checkout; else a git revision of this repository."""
    if spec is None:
        yield _working_tree(REPO_ROOT)
        return
    if Path(spec).is_dir():
        yield _working_tree(Path(spec).resolve())
        return
    commit = _git(REPO_ROOT, "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}")
    if commit is None:
        raise BenchError(f"--code {spec!r} is neither a directory nor a git revision of {REPO_ROOT}")
    target = Path(tempfile.mkdtemp(prefix=f"leaderboard-bench-{commit[:12]}-"))
    try:
        archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=REPO_ROOT, stdout=subprocess.PIPE)
        extract = subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout, capture_output=True)
        if archive.wait() != 0 or extract.returncode != 0:
            raise BenchError(f"cannot export {spec} ({commit[:12]}): {extract.stderr.decode(errors='replace')}")
        subject = _git(REPO_ROOT, "log", "-1", "--format=%s", commit)
        log(f"measuring {spec} = {commit[:12]} ({subject}), exported to {target}")
        yield CodeTree(target, {"source": f"git archive {spec}", "commit": commit, "subject": subject, "dirty": False})
    finally:
        shutil.rmtree(target, ignore_errors=True)


def add_code_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--code",
        metavar="REV|DIR",
        help="measure this git revision (exported with git archive) or checkout instead of the working tree",
    )


def run_benchmark(args: argparse.Namespace, run: Callable[[argparse.Namespace, Any, CodeTree], int]) -> int:
    """`run(args, env, code)` on the code `--code` names, in the bench environment (behind any
    benchmark holding its lock); the exit status every benchmark shares (1: a bench error, 130:
    interrupted)."""
    try:
        with code_tree(args.code) as code, bench_environment(code.path) as env:
            return run(args, env, code)
    except BenchError as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
