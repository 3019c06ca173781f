"""References in the repository resolve inside it: the API is cited as docs/api.md's numbered
sections, never as an outside "contract", and nothing cites a tracker number ("issue 7"),
which a reader of the repository cannot look up. Scope: every tracked text file (app code,
tests, docs, README, templates, scripts, bench, clients), not recorded results."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.test_api_doc import section_text

ROOT = Path(__file__).resolve().parent.parent
TEXT = (".py", ".md", ".html", ".js", ".ts", ".lua", ".toml", ".txt", ".css", ".sh", ".cfg", "Makefile", "run")
TRACKER_NUMBER = re.compile(r"\bissues?[ _#-]*[0-9]+", re.IGNORECASE)
CONTRACT = re.compile(r"\bcontract", re.IGNORECASE)
# "section 6" alone: of which document? (a citation names its file: docs/api.md §6)
BARE_SECTION = re.compile(r"^(?!.*\.md\b).*\bsections? [0-9]+", re.IGNORECASE)
# docs/api.md §4, §4.5, and lists like "docs/api.md §3.2, §4" (each § is checked)
API_CITATION = re.compile(r"docs/api\.md((?:[ ,]+(?:and )?§[0-9]+(?:\.[0-9]+)?)+)")
SECTION = re.compile(r"§([0-9]+(?:\.[0-9]+)?)")


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / n for n in names if n.endswith(TEXT) and not n.startswith("bench/results/") and (ROOT / n).exists()]


def lines_matching(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for path in tracked_text_files():
        if path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_the_scan_sees_the_repository() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in tracked_text_files()}
    assert {"README.md", "docs/api.md", "scores/api/matches.py", "templates/404.html", "bench/README.md"} <= names


def test_no_tracker_numbers() -> None:
    assert lines_matching(TRACKER_NUMBER) == []


def test_no_citation_of_a_contract_outside_the_repository() -> None:
    assert lines_matching(CONTRACT) == []


def test_no_section_cited_without_its_document() -> None:
    assert lines_matching(BARE_SECTION) == []


def test_every_citation_of_docs_api_md_names_a_section_it_has() -> None:
    unresolved, cited = [], 0
    for path in tracked_text_files():
        # a citation may wrap: "docs/api.md\n§1.1" in a docstring or a paragraph
        text = re.sub(r"docs/api\.md\s*\n[\s#*/-]*§", "docs/api.md §", path.read_text(errors="replace"))
        for citation in API_CITATION.finditer(text):
            for number in SECTION.findall(citation.group(1)):
                cited += 1
                if section_text(number) is None:
                    unresolved.append(f"{path.relative_to(ROOT)}: docs/api.md §{number}")
    assert cited > 100  # the code cites it throughout
    assert unresolved == []
