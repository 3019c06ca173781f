"""References in the repository resolve inside it: the API is cited as docs/api.md's numbered
sections, never as an outside "contract" nor as a bare number ("(13.6)", "§4" with no file
named), and nothing cites a tracker number ("issue 7"), which a reader of the repository
cannot look up. Scope: every tracked text file (app code, tests, docs, README, templates,
scripts, bench, clients), not recorded results."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.test_api_doc import section_text

ROOT = Path(__file__).resolve().parent.parent
TEXT = (".py", ".md", ".html", ".js", ".ts", ".lua", ".toml", ".txt", ".css", ".sh", ".cfg", "Makefile", "run")
# "issue 7", "issues/7", "ticket 7", "PR #7", "pull/7": numbers of a tracker outside the repository
TRACKER_NUMBER = re.compile(
    r"\b(?:issues?|tickets?)[ _#/-]*[0-9]+|(?-i:\bPRs?) ?#[0-9]+|\bpulls?/[0-9]+|\bpull requests? ?#?[0-9]+",
    re.IGNORECASE,
)
CONTRACT = re.compile(r"\bcontract", re.IGNORECASE)
# "section 6" alone: of which document? (a citation names its file: docs/api.md §6)
BARE_SECTION = re.compile(r"^(?!.*\.md\b).*\bsections? [0-9]+", re.IGNORECASE)
# "leagues (13.6)": a section number with no document at all, whatever else the line names
# (a real citation is "docs/api.md §12.2"). Two small positive parts in parentheses, not
# after a name: a call's argument (sleep(0.1)), a default (5.0), a share (0.75) or a version
# ("Python (3.11)") is no match.
BARE_NUMBER = re.compile(
    r"(?<![\w.])(?<!python )(?<!version )(?<!node )\(\s*[1-9][0-9]?\.[1-9][0-9]?\s*\)", re.IGNORECASE
)
# "§13.6" on a line that names no docs file: of which document? docs/api.md's own lines are
# exempt (they cite the file they are in); a citation wrapped after its file ("docs/api.md\n§4")
# names it on the line before.
SECTION_SIGN = re.compile(r"§\s*[0-9]")
NAMES_A_DOC = re.compile(r"\.md\b")
# docs/reads.md, "Deep paging" (or without the comma, or wrapped after the file): the part of
# that file the quoted names begin, and lists of them: docs/moderation.md, "board_top", "server_outlier"
NAMED_PART = re.compile(r'(docs/[\w/-]+\.md),?[ \t]*(?:\n[\s#*/-]*)?((?:"[A-Za-z_`][^"\n]*"(?:, )?)+)')
QUOTED = re.compile(r'"([^"]+)"')
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


def test_the_tracker_pattern_catches_what_it_means_to() -> None:
    for cited in ("issue 7", "Issues/12", "ticket 7", "ticket #31", "PR #7", "PR#7", "pull/7", "pull request 7"):
        assert TRACKER_NUMBER.search(cited), cited
    for fine in ("pr #1 of the css", "tickets sold", "spr #3", "no issue: 7 players", "pull 7 rows", "pullback/7"):
        assert not TRACKER_NUMBER.search(fine), fine


def test_no_citation_of_a_contract_outside_the_repository() -> None:
    assert lines_matching(CONTRACT) == []


def test_no_section_cited_without_its_document() -> None:
    assert lines_matching(BARE_SECTION) == []


def test_no_section_number_cited_without_its_document() -> None:
    assert lines_matching(BARE_NUMBER) == []


def test_no_section_sign_on_a_line_that_names_no_document() -> None:
    found = []
    for path in tracked_text_files():
        if path in (Path(__file__), ROOT / "docs" / "api.md"):
            continue
        before = ""
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            wrapped = before.rstrip().endswith(".md")
            if SECTION_SIGN.search(line) and not NAMES_A_DOC.search(line) and not wrapped:
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
            before = line
    assert found == []


def test_the_bare_citation_patterns_catch_what_they_mean_to() -> None:
    assert BARE_NUMBER.search("leagues (13.6): placement")
    assert BARE_NUMBER.search("settlement ( 13.7 )")
    not_citations = (
        "time.sleep(0.1)",
        "`history_factor` (5.0)",
        "(0.75)",
        "_pace(2.5)",
        "Python (3.11)",
        "(docs/api.md §12.2)",
    )
    for fine in not_citations:
        assert not BARE_NUMBER.search(fine), fine
    assert SECTION_SIGN.search("restores §9's letter") and SECTION_SIGN.search("§ 13.6")
    assert NAMES_A_DOC.search("docs/api.md §9") and not NAMES_A_DOC.search("version 1.2.md5")


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


def names_in(doc: Path) -> list[str]:
    """What a citation may name in a document, lowercased: its headings, its bold paragraph
    titles ("**Delivery.** ...") and the code names its tables' rows begin with (a rule, a
    setting: "| `board_top` | ...")."""
    text = doc.read_text()
    names = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    names += re.findall(r"\*\*([^*\n]+)\*\*", text)
    names += re.findall(r"^\| `([^`]+)` \|", text, flags=re.M)
    return [name.lower() for name in names]


def unresolved_names(path: Path, text: str) -> tuple[int, list[str]]:
    cited, unresolved = 0, []
    for citation in NAMED_PART.finditer(text):
        doc = ROOT / citation.group(1)
        for quoted in QUOTED.findall(citation.group(2)):
            cited += 1
            wanted = quoted.lower().rstrip(".,:")
            if not doc.exists() or not any(name.startswith(wanted) for name in names_in(doc)):
                unresolved.append(f'{path.relative_to(ROOT)}: {citation.group(1)}, "{quoted}"')
    return cited, unresolved


def test_every_named_part_of_a_doc_cited_is_in_that_doc() -> None:
    """A citation by heading stays true when the heading is renamed only if something checks it."""
    cited, unresolved = 0, []
    for path in tracked_text_files():
        if path != Path(__file__):
            found = unresolved_names(path, path.read_text(errors="replace"))
            cited += found[0]
            unresolved += found[1]
    assert cited > 50  # the repository cites its docs this way throughout
    assert unresolved == []


def test_the_named_part_check_can_fail() -> None:
    here = Path(__file__)
    good = 'see (docs/reads.md, "Deep paging"), docs/moderation.md "board_top", "server_outlier"'
    assert unresolved_names(here, good) == (3, [])
    wrapped = 'docs/competitions.md,\n# "Delivery": at least once'
    assert unresolved_names(here, wrapped) == (1, [])
    bad = 'docs/reads.md, "Friends" and docs/nowhere.md, "Deep paging"'
    assert unresolved_names(here, bad)[1] == [
        'tests/test_references.py: docs/reads.md, "Friends"',
        'tests/test_references.py: docs/nowhere.md, "Deep paging"',
    ]
