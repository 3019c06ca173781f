"""schemathesis against /api/schema/, every request signed the way a game server signs
(docs/api.md §3.1), in its three phases:

- fuzzing, positive: a bounded number of generated requests per operation with every built-in
  check: no 5xx, answers that keep to the documented schema;
- coverage (positive and negative: boundary values, each limit just inside and just outside,
  wrong types, missing fields) and negative fuzzing: no 5xx, no request the schema allows
  refused for its form, and no request the schema forbids answered as if it were well formed. A refusal that depends on data, not form (an unknown board, a score
  outside that board's bounds, a window not frozen yet), is the service's to make: the schema
  cannot know the game's configuration.

Path parameters are sent twice for positive cases: as generated (their forms are under test,
with the fixture's game so the signature is accepted), and as the fixture's real ids, so
query and body limits meet a real board rather than a 404."""

from __future__ import annotations

import json
import re
from urllib.parse import quote, unquote, urlencode

import schemathesis
from django.urls import path
from django.utils.encoding import escape_uri_path
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from jsonschema import Draft4Validator
from leaderboard_client.signing import sign
from rest_framework import serializers
from rest_framework.views import APIView
from schemathesis.checks import negative_data_rejection, positive_data_acceptance
from schemathesis.config import GenerationConfig
from schemathesis.core import NotSet
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode
from werkzeug.test import Client as WsgiClient

from boards.cursor import BadCursor, cursor_at, cursor_decode
from leaderboard_project.schema import ANY_TEXT, PATH_PARAMETERS
from leaderboard_project.wsgi import application
from scores.api.common import TextField
from scores.encoding import EXACT_BITS
from scores.ids import PLAYER_RE
from tests.boards.conftest import submit
from tests.conftest import SignedClient

EXAMPLES_PER_OPERATION = 12
# a failure is reported as found: shrinking it took minutes
NO_SHRINKING = [Phase.explicit, Phase.reuse, Phase.generate]


def signed_call(case, server: SignedClient):
    """Send the case as a game server would: the exact bytes and path signed."""
    raw_path = unquote(case.formatted_path)
    path = escape_uri_path(raw_path)
    query = urlencode(case.query or {}, doseq=True, quote_via=quote)
    if isinstance(case.body, NotSet):
        body = b""
    elif isinstance(case.body, bytes):
        body = case.body  # negative cases: a body that is not JSON at all
    else:
        body = json.dumps(case.body).encode()
    signed_path = f"{path}?{query}" if query else path
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() not in ("x-key-id", "x-signature")}
    headers.update(
        {
            "Content-Type": "application/json",
            "X-Key-Id": server.key_id,
            "X-Signature": sign(server.secret, case.method, signed_path, body),
        }
    )
    # RAW_URI: the path with its query as sent, as gunicorn gives it (werkzeug's leaves out the
    # query, which then fails the signature of every read with parameters)
    environ = {"RAW_URI": signed_path, "REQUEST_URI": signed_path}
    return WsgiClient(application).open(
        path=path, method=case.method, query_string=query, data=body, headers=headers, environ_overrides=environ
    ), headers


def test_every_operation_keeps_to_its_schema(server: SignedClient, game) -> None:
    submit(server, "m-1", [{"player": "p1", "board": "rating", "score": 10}])
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12  # every operation the API documents

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            phases=NO_SHRINKING,
            suppress_health_check=list(HealthCheck),
        )
        def keeps_to_the_schema(case) -> None:
            for path_parameters in _variants(case):
                case.path_parameters = path_parameters
                response, headers = signed_call(case, server)
                # schemathesis' own "valid data accepted" check would count a refusal that depends on
                # data (an unknown board, a cursor this board never gave) as a schema gap; ours below
                # counts only refusals for the request's form. (Its "invalid data refused" check has
                # nothing to look at in positive cases, but takes the ids swapped in for a negation.)
                case.validate_response(
                    response,
                    excluded_checks=[positive_data_acceptance, negative_data_rejection],
                    headers=headers,
                    transport_kwargs={"app": application},
                )
                assert not _refused_for_its_form(case, response), _message(response)

        keeps_to_the_schema()


# codes that say "this request is malformed": the schema should have forbidden it
FORM_CODES = {"invalid_body", "invalid_json", "invalid_request", "invalid_query", "invalid_player", "invalid_match_id"}
# limits no JSON Schema can state, stated in the schema's words instead: a rule between the path
# and the body, and a size in bytes of encoded JSON
UNSTATABLE = ("a player cannot be their own friend", "must be at most 1024 bytes of JSON")
REAL_IDS = {"game": "chess", "board": "rating", "player": "p1", "match_id": "m-1", "window": "daily:2026-11-29"}
NEGATIVE_EXAMPLES_PER_OPERATION = 25


def _error_code(response) -> str | None:
    try:
        body = json.loads(response.get_data())
    except ValueError:
        return None
    return body.get("error", {}).get("code") if isinstance(body, dict) else None


def _variants(case):
    """The case with the fixture's game (a signature of another game is a 403 before anything
    is checked), and for positive cases also with every path id real."""
    path = case.meta.components.get(ParameterLocation.PATH) if case.meta else None
    generated = dict(case.path_parameters or {})
    if path is not None and path.mode.is_negative:
        yield generated  # the path itself is what is wrong: keep it
        return
    yield {**generated, "game": REAL_IDS["game"]} if "game" in generated else generated
    if case.meta.generation.mode.is_positive:
        yield {name: REAL_IDS.get(name, value) for name, value in generated.items()}


def _problems(case, server: SignedClient) -> list[str]:
    found = []
    for path_parameters in _variants(case):
        case.path_parameters = path_parameters
        response, _ = signed_call(case, server)
        code = _error_code(response)
        what = f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r}"
        if response.status_code >= 500:
            found.append(f"{response.status_code} {code}: {what}")
        elif _refused_for_its_form(case, response):
            found.append(f"schema allows, service refuses ({code}: {_message(response)}): {what}")
        elif _accepted_against_its_form(case, response):
            found.append(f"schema forbids, service accepts ({response.status_code}): {what}")
    return found


def _sent_path_keeps_its_form(case) -> bool:
    """Whether the path ids, as the service decodes them, are still of their documented form.
    schemathesis treats a generated `%XX` in a path id as already encoded (its `quote_all`
    unquotes first): the valid `uM%05u` is sent as `uM%05u` and arrives as `uM\\x05u` (a control character), which
    the service rightly refuses. That is not the schema allowing a refused request."""
    for name, value in (case.path_parameters or {}).items():
        form = PATH_PARAMETERS.get(name)
        if form and isinstance(value, str):
            sent = unquote(value)
            if not re.fullmatch(form["pattern"], sent) or len(sent) > form.get("maxLength", len(sent)):
                return False
    return True


def _refused_for_its_form(case, response) -> bool:
    """A request the schema allows, refused as malformed."""
    return (
        case.meta.generation.mode.is_positive
        and _sent_path_keeps_its_form(case)
        and response.status_code == 400
        and _error_code(response) in FORM_CODES
        and not any(limit in _message(response) for limit in UNSTATABLE)
    )


# what the signing replaces (a negated header is sent as a signed request's headers)
NEGATABLE = (ParameterLocation.PATH, ParameterLocation.QUERY, ParameterLocation.BODY)


def _accepted_against_its_form(case, response) -> bool:
    """A request the schema forbids, answered as if it were well formed. Not counted: a method
    the operation does not have (OPTIONS is the CORS preflight), and a query with a parameter
    the operation does not name (unknown parameters are ignored; OpenAPI cannot say so)."""
    if case.meta is None or case.meta.generation.mode.is_positive or response.status_code >= 400:
        return False
    negated = [location for location, part in case.meta.components.items() if part.mode.is_negative]
    if not any(location in NEGATABLE for location in negated) or case.method != case.operation.method.upper():
        return False
    declared = {p.name for p in case.operation.query}
    return not (ParameterLocation.QUERY in negated and set(case.query or {}) - declared)


def _message(response) -> str:
    return json.loads(response.get_data())["error"]["message"][:160]


def test_the_coverage_phase_finds_no_5xx_and_nothing_the_schema_allows_but_the_service_refuses(
    server: SignedClient, game
) -> None:
    submit(server, "m-1", [{"player": "p1", "board": "rating", "score": 10}])
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    problems, cases = [], 0
    for result in schema.get_all_operations():
        operation = result.ok()
        for case in schema.iter_coverage_cases(operation, generation_modes=modes, generation_config=GenerationConfig()):
            cases += 1
            problems += _problems(case, server)
    assert cases > 300  # every operation's boundaries, both ways
    assert problems == [], "\n".join(problems)


def test_negative_fuzzing_finds_no_5xx(server: SignedClient, game) -> None:
    submit(server, "m-1", [{"player": "p1", "board": "rating", "score": 10}])
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    problems: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))
        @settings(
            max_examples=NEGATIVE_EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            phases=NO_SHRINKING,
            suppress_health_check=list(HealthCheck),
        )
        def refused_without_a_5xx(case) -> None:
            problems.extend(_problems(case, server))

        try:
            refused_without_a_5xx()
        except Unsatisfiable:
            continue  # nothing to get wrong (GET /api/v1/games takes no parameters)
    assert problems == [], "\n".join(problems)


# oneOf means exactly one branch: a value two branches take is refused by a JSON Schema
# validator, whatever the service does with it


def _resolved(schema: dict, document: dict) -> dict:
    return {**schema, "components": document["components"]}


def _one_ofs(node, where: str = "#"):
    if isinstance(node, dict):
        if isinstance(node.get("oneOf"), list):
            yield where, node["oneOf"]
        for key, value in node.items():
            yield from _one_ofs(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _one_ofs(value, f"{where}/{i}")


def _blank_overlaps(document: dict) -> list[str]:
    """Each oneOf of the document with more than one branch taking the string ""."""
    return [
        where
        for where, branches in _one_ofs(document)
        if sum(Draft4Validator(_resolved(branch, document)).is_valid("") for branch in branches) > 1
    ]


def _schema_of(serializer_class: type[serializers.Serializer]) -> dict:
    class Endpoint(APIView):
        @extend_schema(request=serializer_class, responses={204: None})
        def post(self, request):  # pragma: no cover - described, never called
            raise NotImplementedError

    return SchemaGenerator(patterns=[path("endpoint", Endpoint.as_view())]).get_schema(request=None, public=True)


def test_no_one_of_in_the_schema_has_two_branches_taking_a_blank_string() -> None:
    document = SchemaGenerator().get_schema(request=None, public=True)
    assert _blank_overlaps(document) == []
    approve = {"$ref": "#/components/schemas/ApproveIn"}
    for body in ({"reason": ""}, {"reason": "  "}, {"reason": "checked: legit"}, {}):
        assert Draft4Validator(_resolved(approve, document)).is_valid(body), body
    for body in ({"reason": "a\x00"}, {"reason": "a" * 2001}, {"reason": None}):
        assert not Draft4Validator(_resolved(approve, document)).is_valid(body), body


def test_a_blank_allowed_beside_a_format_stays_a_branch_of_its_own() -> None:
    class Blank(serializers.Serializer):
        text = TextField(allow_blank=True, max_length=10)  # ANY_TEXT takes "": one schema
        email = serializers.EmailField(allow_blank=True)  # a format does not: "" is the other branch

    document = _schema_of(Blank)
    fields = document["components"]["schemas"]["Blank"]["properties"]
    assert "oneOf" not in fields["text"] and fields["text"]["pattern"] == ANY_TEXT
    # exclusive by their lengths, also for a validator that checks no format
    assert [(b.get("minLength"), b.get("maxLength")) for b in fields["email"]["oneOf"]] == [(1, None), (None, 0)]
    assert _blank_overlaps(document) == []
    blank = Draft4Validator(_resolved({"$ref": "#/components/schemas/Blank"}, document))
    assert blank.is_valid({"text": "", "email": ""}) and blank.is_valid({"text": "a", "email": "a@example.com"})


def test_sub_scores_are_never_a_required_part_of_an_answer() -> None:
    """Answers carry `subscores` only on boards that declare sub-scores: a client validating a body
    of any other board against the schema must not find it missing."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    holders = {
        name: component
        for name, component in document["components"]["schemas"].items()
        if "subscores" in component.get("properties", {})
    }
    assert {"FrozenEntry", "PlayerOut"} <= holders.keys()
    assert [name for name, component in holders.items() if "subscores" in component.get("required", [])] == []


def test_every_operation_taking_a_player_or_match_id_in_its_path_lists_its_answer_to_a_malformed_one(
    server: SignedClient, game
) -> None:
    """A path id outside docs/api.md §1.1 is refused (`invalid_player`, `invalid_match_id`, or an
    earlier refusal of the request) on every route that takes one, with an answer its operation lists."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    unlisted, codes = [], set()
    for route, operations in document["paths"].items():
        for method, operation in operations.items():
            ids = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"} & {"player", "match_id"}
            if not ids:
                continue
            url = route.format(game="chess", board="rating", player="a b", match_id="a\tb", window="daily:2026-11-29")
            response = server.request(method.upper(), quote(url))
            assert 400 <= response.status_code < 500, response.content
            codes.add(response.json()["error"]["code"])
            if str(response.status_code) not in operation["responses"]:
                unlisted.append(f"{method.upper()} {route}: {response.status_code}")
    assert {"invalid_player", "invalid_match_id"} <= codes
    assert unlisted == []


def _cursor_pattern() -> str:
    """The schema's pattern, its `$` the end of the text as in JSON Schema's (ECMA) regexes
    (Python's `$` also matches before a final newline)."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    top = document["paths"]["/api/v1/games/{game}/boards/{board}/top"]["get"]
    pattern = next(p["schema"]["pattern"] for p in top["parameters"] if p["name"] == "cursor")
    return pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern


@given(text=st.one_of(st.from_regex(_cursor_pattern(), fullmatch=True), st.text(alphabet="0123456789abcdef.:pA_-\n ")))
@settings(max_examples=300, deadline=None)
def test_the_cursor_pattern_states_exactly_the_cursors_the_service_takes(text: str) -> None:
    """`top?cursor=` is refused (invalid_cursor) exactly when the schema's pattern forbids it: a
    cursor is data no query can make malformed, so its form is the whole rule (docs/api.md §5.3)."""
    try:
        cursor_decode(text)
        taken = True
    except BadCursor:
        taken = False
    assert taken == (re.search(_cursor_pattern(), text) is not None), text


@given(encoded=st.integers(0, (1 << EXACT_BITS) - 1), player=st.from_regex(PLAYER_RE, fullmatch=True))
@settings(max_examples=200, deadline=None)
def test_every_cursor_the_service_hands_out_keeps_to_the_pattern(encoded: int, player: str) -> None:
    cursor = cursor_at(encoded, player)
    assert re.search(_cursor_pattern(), cursor) and cursor_decode(cursor) == (encoded, player)
