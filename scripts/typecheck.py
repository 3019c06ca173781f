"""mypy over the app packages against a baseline that may only shrink (docs/dev-environment.md).

    python scripts/typecheck.py            # fail on any error not in the baseline, or listed but fixed
    python scripts/typecheck.py --update   # rewrite the baseline (only ever to remove lines)

The baseline (scripts/mypy-baseline.txt) lists the errors the code had when the checker came in,
as `path: [code] message` with a count and no line numbers, so moving code does not disturb it.
An error not in it fails `make test`, and so does an error it lists that no longer occurs (left
listed, the fixed error could silently come back); `--update` drops it. The modules under
`[[tool.mypy.overrides]]` in pyproject.toml are strict and have no baseline lines.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BASELINE = REPO_ROOT / "scripts" / "mypy-baseline.txt"
# path:line: error: message  [code]   (mypy's default output, one error per line)
ERROR = re.compile(r"^(?P<path>[^:]+):\d+: error: (?P<message>.*?)\s+\[(?P<code>[a-z-]+)\]$")


def errors_now() -> Counter[str]:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-pretty", "--no-error-summary", "--show-error-codes"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (a crash, a bad config)
        sys.exit(f"typecheck: mypy failed:\n{done.stdout}{done.stderr}")
    found: Counter[str] = Counter()
    for line in done.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            found[f"{m['path']}: [{m['code']}] {m['message']}"] += 1
    return found


def baseline() -> Counter[str]:
    counted: Counter[str] = Counter()
    if BASELINE.exists():
        for line in BASELINE.read_text().splitlines():
            if line and not line.startswith("#"):
                count, _, error = line.partition(" ")
                counted[error] = int(count)
    return counted


def write_baseline(errors: Counter[str]) -> None:
    header = "# mypy errors accepted when the checker came in: may only shrink (scripts/typecheck.py)\n"
    BASELINE.write_text(header + "".join(f"{n} {e}\n" for e, n in sorted(errors.items())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="rewrite the baseline; it may only shrink")
    args = parser.parse_args(argv)
    now, accepted = errors_now(), baseline()
    new = now - accepted
    fixed = accepted - now
    if args.update:
        if new and BASELINE.exists():
            print("typecheck: refusing to grow the baseline; fix these instead:", file=sys.stderr)
            print("".join(f"  {e}\n" for e in sorted(new.elements())), file=sys.stderr)
            return 1
        write_baseline(now)
        print(f"typecheck: baseline now {sum(now.values())} errors ({sum(fixed.values())} fewer)")
        return 0
    if new:
        print(f"typecheck: {sum(new.values())} mypy error(s) not in the baseline:", file=sys.stderr)
        print("".join(f"  {e}\n" for e in sorted(new.elements())), file=sys.stderr)
        print("run `.venv/bin/mypy` for line numbers", file=sys.stderr)
        return 1
    if fixed:
        # still listed, a fixed error could come back unnoticed: the baseline must shrink with the fix
        print(f"typecheck: {sum(fixed.values())} error(s) in the baseline no longer occur:", file=sys.stderr)
        print("".join(f"  {e}\n" for e in sorted(fixed.elements())), file=sys.stderr)
        print("run `.venv/bin/python scripts/typecheck.py --update` and commit the smaller baseline", file=sys.stderr)
        return 1
    print(f"typecheck: no new mypy errors ({sum(now.values())} in the baseline, none of them fixed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
