"""docs/api.md against the service itself: its endpoint index (docs/api.md §16) lists exactly
the operations of the OpenAPI schema, and its error table (docs/api.md §14) exactly the codes
the code can answer, so the reference cannot drift from what a client meets."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft4Validator

from leaderboard_project.errors import _DRF_CODES
from scores.api.match_body import ENDED_AT_MAX, ENDED_AT_MIN, MAX_METADATA_BYTES

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


# docs/api.md §15 against the schema: each limit the table states, at its edges, as a
# validator reads the schema (the schema's own limits are held to the service by
# tests/test_schema.py's boundary cases, so the doc, the schema and the service agree).


@cache
def openapi_schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def limits() -> dict[str, str]:
    """docs/api.md §15's table: what -> limit."""
    return {row[0]: row[1] for row in _table_rows(_section("15")) if row[0] != "what"}


def accepts(schema: dict[str, Any], value: Any) -> bool:
    # OpenAPI 3.0's schema objects are JSON Schema draft 4's keywords; $refs resolve in the document
    root = {**schema, "components": openapi_schema()["components"]}
    return Draft4Validator(root).is_valid(value)


def component(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def parameter(operation_id: str, name: str) -> dict[str, Any]:
    for operations in openapi_schema()["paths"].values():
        for operation in operations.values():
            if isinstance(operation, dict) and operation.get("operationId") == operation_id:
                for found in operation.get("parameters", []):
                    if found["name"] == name:
                        return found
    raise AssertionError(f"{operation_id} has no parameter {name}")


def operation_parameters() -> list[tuple[str, dict[str, Any]]]:
    return [
        (operation["operationId"], found)
        for operations in openapi_schema()["paths"].values()
        for method, operation in operations.items()
        if method in METHODS
        for found in operation.get("parameters", [])
    ]


def _match(**fields: Any) -> dict[str, Any]:
    body = {
        "match_id": "m-1",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": "p1", "board": "b", "score": 1}],
    }
    return {**body, **fields}


def _result(**fields: Any) -> dict[str, Any]:
    return {"player": "p1", "board": "b", "score": 1, **fields}


def _bounds(text: str) -> tuple[int, int]:
    found = re.fullmatch(r"([0-9]+)-([0-9]+)(?: characters)?", text.strip())
    assert found is not None, f"not a range: {text!r}"
    return int(found.group(1)), int(found.group(2))


def _count_limit(text: str, schema: dict[str, Any], instance: Callable[[int], Any]) -> None:
    """`lo-hi` items (or `hi` alone: at most): `instance(n)` holds n of them."""
    lo, hi = _bounds(text) if "-" in text else (0, int(text))
    assert accepts(schema, instance(lo)) and accepts(schema, instance(hi)), f"{text}: an edge refused"
    assert not accepts(schema, instance(hi + 1)), f"{text}: {hi + 1} accepted"
    if lo > 0:
        assert not accepts(schema, instance(lo - 1)), f"{text}: {lo - 1} accepted"


def _query_limits(operation_id: str, text: str) -> None:
    """Each parameter the row names: `limit` 1-100 (default 10), `version` >= 1, `cursor` at
    most 200 characters."""
    checked = 0
    for name, lo, hi, default in re.findall(r"`(\w+)` ([0-9]+)-([0-9]+)(?: \(default ([0-9]+)\))?", text):
        schema = parameter(operation_id, name)["schema"]
        assert accepts(schema, int(lo)) and accepts(schema, int(hi)), f"{operation_id} {name}"
        assert not accepts(schema, int(lo) - 1) and not accepts(schema, int(hi) + 1), f"{operation_id} {name}"
        if default:
            assert schema.get("default") == int(default), f"{operation_id} {name}"
        checked += 1
    for name, lo in re.findall(r"`(\w+)` >= ([0-9]+)", text):
        schema = parameter(operation_id, name)["schema"]
        assert accepts(schema, int(lo)) and not accepts(schema, int(lo) - 1), f"{operation_id} {name}"
        checked += 1
    for name, most in re.findall(r"`(\w+)` at most ([0-9]+) characters", text):
        schema = parameter(operation_id, name)["schema"]
        assert accepts(schema, "a" * int(most)) and not accepts(schema, "a" * (int(most) + 1)), f"{operation_id} {name}"
        checked += 1
    assert checked == text.count("`") // 2, f"a limit of {text!r} the test does not read"


def _ended_at_range(text: str) -> None:
    """The row reads "from 1970-01-01T00:00:00Z, before 9999-01-01T00:00:00Z; at most 60 s in
    the future". The pattern keeps off each edge's whole day, where the offset decides (a local
    9998-12-31T23:00:00-05:00 is past the end): the service judges those."""
    found = re.match(
        r"from ([0-9-]{10})T00:00:00Z, before ([0-9-]{10})T00:00:00Z; at most ([0-9]+) s in the future", text
    )
    assert found is not None, text
    first, end, future = found.groups()
    first_day, end_day = date.fromisoformat(first), date.fromisoformat(end)

    def at(day: date) -> dict[str, Any]:
        return _match(ended_at=f"{day.isoformat()}T00:00:00Z")

    assert accepts(component("MatchIn"), at(first_day + timedelta(days=1)))
    assert accepts(component("MatchIn"), at(end_day - timedelta(days=2)))
    assert not accepts(component("MatchIn"), at(first_day - timedelta(days=1)))
    assert not accepts(component("MatchIn"), at(end_day))
    # the edges themselves and the bound against the clock (no schema states it): the service's
    assert (ENDED_AT_MIN.date(), ENDED_AT_MAX.date()) == (first_day, end_day)
    assert int(future) == settings.MAX_ENDED_AT_FUTURE_SECONDS


def _reasons(text: str) -> None:
    """The row reads "1-2000 characters (void), 0-2000 (approve)"."""
    found = re.findall(r"([0-9]+)-([0-9]+)(?: characters)? \((void|approve)\)", text)
    assert {what for *_, what in found} == {"void", "approve"}, text
    for lo, hi, what in found:
        body = component({"void": "VoidIn", "approve": "ApproveIn"}[what])
        _count_limit(f"{lo}-{hi}", body, lambda n: {"reason": "a" * n})


def _ids(text: str) -> None:
    """The forms of docs/api.md §1.1, wherever the schema takes that id: path parameters,
    query parameters and body fields. A slug's and a player's form is a pattern the schema
    states as written; a match id's is words, probed at its edges."""
    assert text == "§1.1"  # the row points at docs/api.md §1.1
    forms = {row[0]: row[1] for row in _table_rows(section_text("1.1") or "") if row[0] != "id"}
    slug = re.search(r"`([^`]+)`", forms["game, board, region, season"]).group(1)
    player = re.search(r"`([^`]+)`", forms["player"]).group(1)
    slug_length = int(re.search(r"\{0,([0-9]+)\}$", slug).group(1)) + 1  # the first character, then these
    player_length = int(re.search(r"\{1,([0-9]+)\}$", player).group(1))
    match_length = int(re.match(r"1-([0-9]+) printable ASCII characters \(`0x20`-`0x7e`\)", forms["match"]).group(1))
    good = {
        "slug": ["a", "a" * slug_length, "a-0"],
        "player": ["p", "p" * player_length, "P_.:@-9"],
        "match": ["m", "m" * match_length, "m 1", "~!"],
    }
    bad = {
        "slug": ["", "a" * (slug_length + 1), "-a", "A", " a", "a\x00"],
        "player": ["", "p" * (player_length + 1), "p 1", " p", "p\x00", "p/1"],
        "match": ["", "m" * (match_length + 1), " m", "m ", "m\x00", "m\x7f", "m\u00e9"],
    }
    stated = {"slug": f"^{slug}$", "player": f"^{player}$"}
    kinds = {"game": "slug", "board": "slug", "region": "slug", "player": "player", "match_id": "match"}
    where = [
        (f"{operation_id} {found['name']}", kinds[found["name"]], found["schema"])
        for operation_id, found in operation_parameters()
        if found["name"] in kinds
    ]
    bodies = openapi_schema()["components"]["schemas"]
    where += [
        (f"ResultIn.{name}", kinds[name], bodies["ResultIn"]["properties"][name])
        for name in ("player", "board", "region")
    ]
    where += [
        ("MatchIn.match_id", "match", bodies["MatchIn"]["properties"]["match_id"]),
        ("FriendListIn.friends", "player", bodies["FriendListIn"]["properties"]["friends"]["items"]),
    ]
    assert len(where) > 30
    for name, kind, schema in where:
        assert schema.get("pattern") == stated.get(kind, schema.get("pattern")), name
        assert all(accepts(schema, value) for value in good[kind]), name
        assert not any(accepts(schema, value) for value in bad[kind]), name


def _text(text: str) -> None:
    """No NUL; trimmed, and not blank after (the approve reason may be blank)."""
    assert "no NUL" in text and "must not be blank" in text and "approve `reason` may be" in text

    def display_name(value: str) -> dict[str, Any]:
        return _match(results=[_result(display_name=value)])

    for schema, body in ((component("MatchIn"), display_name), (component("VoidIn"), lambda value: {"reason": value})):
        assert accepts(schema, body(" a ")) and accepts(schema, body("a b"))
        assert not any(accepts(schema, body(value)) for value in ("a\x00", " ", "\t\n", "\u3000")), schema
    for value in ("", " ", "a"):
        assert accepts(component("ApproveIn"), {"reason": value}), repr(value)
    assert not accepts(component("ApproveIn"), {"reason": "a\x00"})


def _forms(text: str) -> None:
    """`ended_at` and `window` as patterns, with ASCII digits."""
    assert "§4.1" in text and "§1.2" in text and "ASCII `0-9`" in text  # docs/api.md's own sections
    for good in ("2026-11-29T18:59:58Z", "2026-11-29T18:59:58.123+01:00"):
        assert accepts(component("MatchIn"), _match(ended_at=good)), good
    for bad in ("2026-11-29T18:59:58", "2026-11-29 18:59:58Z", "2026-11-29", "\u0662026-11-29T18:59:58Z"):
        assert not accepts(component("MatchIn"), _match(ended_at=bad)), bad
    windows = [found["schema"] for _, found in operation_parameters() if found["name"] == "window"]
    assert len(windows) >= 7
    for schema in windows:
        assert accepts(schema, "daily:2026-11-29") and accepts(schema, "season:s1"), schema
        assert not any(accepts(schema, w) for w in ("daily:\u0662026-11-29", "daily:2026-11-29 ", "hourly")), schema


def _types(text: str) -> None:
    """Text and ids are strings, `score` an integer, a moderation body an object, an integer
    query parameter `type: integer`."""
    assert accepts(component("MatchIn"), _match(results=[_result()]))
    for result in (_result(player=123), _result(board=1), _result(score="123"), _result(score=True)):
        assert not accepts(component("MatchIn"), _match(results=[result])), result
    for body in ("VoidIn", "ApproveIn"):
        assert not accepts(component(body), []) and not accepts(component(body), "reason"), body
        assert not accepts(component(body), {"reason": 1}), body
    integers = {name for name in re.findall(r"`(\w+)=", text)}  # `limit=5.0`
    for operation_id, found in operation_parameters():
        if found["name"] in integers | {"offset", "around", "version"}:
            assert found["schema"]["type"] == "integer", f"{operation_id} {found['name']}"


def _query_text(text: str) -> None:
    """An optional query parameter sent empty is as if not sent: `allowEmptyValue`."""
    assert "`allowEmptyValue`" in text
    optional = [
        (o, found) for o, found in operation_parameters() if found["in"] == "query" and not found.get("required")
    ]
    assert len(optional) > 20
    assert [f"{o} {found['name']}" for o, found in optional if not found.get("allowEmptyValue")] == []


def _metadata(text: str) -> None:
    """A size in bytes of encoded JSON, which JSON Schema cannot count: the schema says it in words."""
    size = re.fullmatch(r"a JSON object of at most ([0-9]+) bytes, compact", text).group(1)
    schema = openapi_schema()["components"]["schemas"]["ResultIn"]["properties"]["metadata"]
    assert schema["type"] == "object" and f"at most {size} bytes" in schema["description"]
    assert int(size) == MAX_METADATA_BYTES


def _signature_age(text: str) -> None:
    """A header's timestamp against the clock: no schema states it."""
    assert int(re.fullmatch(r"([0-9]+) s either way", text).group(1)) == settings.SIGNATURE_MAX_SKEW_SECONDS


def _group(text: str) -> None:
    """A league group's id: digits, at most so many characters, on both reads that take one."""
    most = int(re.search(r"at most ([0-9]+) characters", text).group(1))
    for operation_id in ("boards_standings", "boards_export"):
        schema = parameter(operation_id, "group")["schema"]
        assert accepts(schema, "1") and accepts(schema, "9" * most), operation_id
        assert not any(accepts(schema, value) for value in ("", "9" * (most + 1), "a1", " 1")), operation_id


LIMIT_CHECKS: dict[str, Callable[[str], None]] = {
    "signature age": _signature_age,
    "`ended_at`": _ended_at_range,
    "results per match": lambda text: _count_limit(
        text, component("MatchIn"), lambda n: _match(results=[_result(player=f"p{i}") for i in range(n)])
    ),
    "matches per batch": lambda text: _count_limit(text, component("BatchIn"), lambda n: {"matches": [_match()] * n}),
    "`display_name`": lambda text: _count_limit(
        text, component("MatchIn"), lambda n: _match(results=[_result(display_name="a" * n)])
    ),
    "`metadata`": _metadata,
    "friends per player": lambda text: _count_limit(
        text, component("FriendListIn"), lambda n: {"friends": [f"p{i}" for i in range(n)]}
    ),
    "`top`": lambda text: _query_limits("boards_top", text),
    "player read": lambda text: _query_limits("boards_player", text),
    "standings": lambda text: _query_limits("boards_standings", text),
    "export": lambda text: _query_limits("boards_export", text),
    "`group` (standings, export)": _group,
    "void / approve `reason`": _reasons,
    "ids": _ids,
    "text (`display_name`, `reason`)": _text,
    "`ended_at`, `window`": _forms,
    "types": _types,
    "query text": _query_text,
}
# limits of the request as a whole or of the caller, set by the environment: no schema of a
# body or a parameter can state them (docs/operations.md, the settings)
NOT_IN_THE_SCHEMA = {
    "request body",
    "JSON nesting",
    "player token lifetime",
    "player reads",
    "public reads (top, histogram, standings, game descriptions, the player pages)",
    "websocket handshakes",
    "client address",
    "failed sign-ins (admin, player pages)",
}


def test_every_limit_of_the_reference_is_checked_against_the_schema() -> None:
    documented = set(limits())
    assert len(documented) > 15  # the table was read
    assert documented - set(LIMIT_CHECKS) - NOT_IN_THE_SCHEMA == set(), "a limit of docs/api.md §15 nothing checks"
    assert (set(LIMIT_CHECKS) | NOT_IN_THE_SCHEMA) - documented == set(), "checked here, gone from docs/api.md §15"


@pytest.mark.parametrize("what", sorted(LIMIT_CHECKS))
def test_each_limit_of_the_reference_is_in_the_schema(what: str) -> None:
    text = limits().get(what)
    assert text is not None, f"docs/api.md §15 has no row {what!r}"
    LIMIT_CHECKS[what](text)
