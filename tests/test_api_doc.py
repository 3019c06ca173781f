"""docs/api.md against the service itself: its endpoint index (docs/api.md §16) lists exactly
the operations of the OpenAPI schema, and its error table (docs/api.md §14) exactly the codes
the code can answer, so the reference cannot drift from what a client meets."""

from __future__ import annotations

import re
from pathlib import Path

from drf_spectacular.generators import SchemaGenerator

from leaderboard_project.errors import _DRF_CODES

ROOT = Path(__file__).resolve().parent.parent
API_DOC = ROOT / "docs" / "api.md"
APPS = ("scores", "boards", "anticheat", "seasons", "competitions", "monitoring", "pages", "leaderboard_project")
METHODS = ("get", "post", "put", "patch", "delete")


def section_text(number: str) -> str | None:
    """The text of docs/api.md's section `number` ("5" for `## 5. ...`, "5.2" for
    `### 5.2 ...`) up to the next heading, or None if there is no such section."""
    text = API_DOC.read_text()
    heading = rf"## {re.escape(number)}\. " if "." not in number else rf"### {re.escape(number)} "
    found = re.search(rf"^{heading}.*?(?=^##|\Z)", text, flags=re.M | re.S)
    return None if found is None else found.group(0)


def _section(number: str) -> str:
    """A whole top-level section, its subsections included."""
    found = re.search(rf"^## {re.escape(number)}\. .*?(?=^## |\Z)", API_DOC.read_text(), flags=re.M | re.S)
    assert found is not None, f"docs/api.md has no section {number}"
    return found.group(0)


def _table_rows(section: str) -> list[list[str]]:
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set(line) <= set("|- ") and cells[0] not in ("method", "status"):
            rows.append(cells)
    return rows


def documented_operations() -> set[tuple[str, str]]:
    return {(method, path.strip("`")) for method, path, _ in _table_rows(_section("16"))}


def schema_operations() -> set[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {(m.upper(), path) for path, ops in schema["paths"].items() for m in ops if m in METHODS}


def test_the_endpoint_index_lists_every_operation_of_the_schema_and_no_other() -> None:
    documented, served = documented_operations(), schema_operations()
    assert len(served) >= 18
    assert served - documented == set(), "in the schema, missing from docs/api.md §16"
    assert documented - served == set(), "in docs/api.md §16, not in the schema"


def test_every_indexed_endpoint_is_described_in_the_section_it_names() -> None:
    for method, path, where in _table_rows(_section("16")):
        text = section_text(where.removeprefix("§"))
        assert text is not None, f"{method} {path}: docs/api.md has no section {where}"
        assert path.strip("`").removeprefix("/api/v1/games") in text, f"{method} {path} not in {where}"


# error codes, as the code spells them: an ApiError's class attribute or keyword, or a body
# built directly (error_response, error_body)
_CODE = re.compile(r"""\bcode\s*=\s*"([a-z][a-z_]*)"|error_(?:response|body)\(\s*"([a-z][a-z_]*)\"""")


def codes_in_code() -> set[str]:
    found = set(_DRF_CODES.values())
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            # a form field's message key (the admin's sign-in form) is not an API answer
            text = "\n".join(line for line in path.read_text().splitlines() if "forms.ValidationError" not in line)
            found.update(match.group(1) or match.group(2) for match in _CODE.finditer(text))
    return found


def documented_codes() -> set[str]:
    return {code for row in _table_rows(_section("14")) for code in re.findall(r"`([a-z_]+)`", row[1])}


def test_the_error_table_lists_every_code_the_service_answers_and_no_other() -> None:
    answered, documented = codes_in_code(), documented_codes()
    assert {"invalid_body", "invalid_match_id", "overloaded", "tournament_full"} <= answered  # the scan works
    assert answered - documented == set(), "answered by the code, missing from docs/api.md §14"
    assert documented - answered == set(), "in docs/api.md §14, answered nowhere"


def test_sections_are_numbered_in_order() -> None:
    numbers = re.findall(r"^## ([0-9]+)\. ", API_DOC.read_text(), flags=re.M)
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)]
