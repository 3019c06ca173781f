"""schemathesis against /api/schema/, every request signed the way a game server signs
(docs/api.md §3.1), in every one of its phases:

- examples, coverage (boundary values, each limit just inside and just outside, wrong types,
  missing fields, methods the route does not have) and fuzzing, positive and negative, per
  operation, as `schemathesis run` does them;
- stateful: sequences of calls chained by the links schemathesis infers from the schema (a
  match submitted, then read, voided or approved by its id...).

Every answer passes every built-in check of schemathesis (no 5xx; status codes, content types,
headers and bodies as documented; ...), except its two about refusals, which are ours instead:
no request the schema allows is refused, and no request the schema forbids is answered as if it
were well formed. A refusal that depends on data, not form (an unknown board, a score outside
that board's bounds, a window not frozen yet, the clock), is the service's to make: the schema
cannot know the game's configuration or what is stored. Those are excused by name (EXCUSED).

Path parameters are sent twice for positive cases: as generated (their forms are under test,
with the fixture's game so the signature is accepted), and as the fixture's real ids, so
query and body limits meet a real board rather than a 404."""

from __future__ import annotations

import functools
import json
import re
from typing import Any
from urllib.parse import quote, unquote, urlencode

import pytest
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
from schemathesis.config import SchemathesisConfig
from schemathesis.core import NotSet
from schemathesis.core.failures import FailureGroup
from schemathesis.core.parameters import ParameterLocation
from schemathesis.core.transport import Response
from schemathesis.generation.hypothesis.builder import HypothesisTestConfig, HypothesisTestMode, create_test
from werkzeug.test import Client as WsgiClient

from boards.cursor import BadCursor, cursor_at, cursor_decode
from leaderboard_project.schema import ANY_TEXT, PATH_PARAMETERS
from leaderboard_project.wsgi import application
from scores.api.common import TextField
from scores.encoding import EXACT_BITS
from scores.ids import PLAYER_RE
from tests.boards.conftest import submit
from tests.conftest import SignedClient, reset_results
from tests.factories import BoardFactory
from tests.properties import examples

# The deep sizes (tests/properties.py) were sized so that the file took about what it took
# when it ran three phases (about 1,950 signed requests, 31-34 s on 2 cores shared): examples,
# coverage and fuzzing about 1,600 cases, the stateful phase about 270 calls. The loop size
# halves the drawn cases; the coverage phase's boundaries are all tried at either size.
EXAMPLES_PER_OPERATION = examples(loop=20, deep=40)  # fuzzing, positive and negative drawn together
STATEFUL_SCENARIOS = 30  # fewer did not always reach a stored batch (the assertion below)
STATEFUL_STEPS = 6
# a failure is reported as found: shrinking it took minutes
NO_SHRINKING = [Phase.explicit, Phase.reuse, Phase.generate]
# ours instead (_refused_though_allowed, _accepted_against_its_form), which know what is data
OURS_INSTEAD = [positive_data_acceptance, negative_data_rejection]

REAL_IDS = {"game": "chess", "board": "rating", "player": "p1", "match_id": "m-1", "window": "daily:2026-11-29"}

# Refusals of a request of the documented form that depend on what no schema can state:
# what exists or is stored (a 404 for a name the game does not have, a match_id stored with
# another body), the game's configuration (a board's score bounds, which boards a tournament
# is, a league's seasons), and the clock (an `ended_at` more than 60 s ahead, a tournament
# over, a window not frozen yet).
EXCUSED = {
    # what exists (docs/api.md §14: every 404)
    "not_found",
    "unknown_game",
    "unknown_board",
    "unknown_player",
    "unknown_region",
    "unknown_window",
    "unknown_match",
    "not_frozen",
    "unknown_version",
    "unknown_group",
    "unknown_tournament",
    "not_a_league",
    # what is stored
    "match_conflict",
    "match_voided",
    "region_changed",
    "not_in_tournament",
    "no_attempts_left",
    # the game's configuration
    "score_out_of_bounds",
    "invalid_match",
    "rule_rejected",
    "bad_window",
    "tournament_full",
    # the clock
    "ended_at_in_future",
    "tournament_closed",
    "tournament_ended",
}
# limits no JSON Schema can state, stated in the schema's words instead: a rule between the path
# and the body, a size in bytes of encoded JSON, a rule between two query parameters, and what
# was sent before (a minting request's signature is served once, docs/api.md §3.1: the phases
# send one request several times within its second)
UNSTATABLE = (
    "a player cannot be their own friend",
    "must be at most 1024 bytes of JSON",
    "use cursor or offset, not both",
    "a request that mints credentials is served once",
)


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
    signing = {"X-Key-Id": server.key_id, "X-Signature": sign(server.secret, case.method, signed_path, body)}
    headers.update(
        {"Content-Type": "application/json", **{k: v for k, v in signing.items() if k not in _left_out(case)}}
    )
    # RAW_URI: the path with its query as sent, as gunicorn gives it (werkzeug's leaves out the
    # query, which then fails the signature of every read with parameters)
    environ = {"RAW_URI": signed_path, "REQUEST_URI": signed_path}
    return WsgiClient(application).open(
        path=path, method=case.method, query_string=query, data=body, headers=headers, environ_overrides=environ
    ), headers


def _left_out(case) -> set[str]:
    """The signature headers a negative case leaves out on purpose (it tests that the service
    refuses the request without them): the game server's signing would add them back."""
    headers = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
    if headers is None or not headers.mode.is_negative:
        return set()
    sent = {name.lower() for name in case.headers or {}}
    return {name for name in ("X-Key-Id", "X-Signature") if name.lower() not in sent}


def _schema():
    config = SchemathesisConfig.from_dict(
        {
            # every phase on (the default), valid and invalid requests in each
            "generation": {"mode": "all", "max-examples": EXAMPLES_PER_OPERATION, "deterministic": True},
            "phases": {"stateful": {"max-steps": STATEFUL_STEPS}},
        }
    )
    return schemathesis.openapi.from_wsgi("/api/schema/", application, config=config)


@pytest.fixture
def stored(server: SignedClient, game) -> None:
    """A match stored (REAL_IDS), and a board named as the slug generation tries first: generated
    matches name a board of the game often enough to be stored, so that what follows a stored
    match (a duplicate, a conflict, the links to void and approve it) is reached too."""
    submit(server, "m-1", [{"player": "p1", "board": "rating", "score": 10}])
    BoardFactory(game=game, slug="0")


def test_every_operation_in_the_examples_coverage_and_fuzzing_phases(server: SignedClient, stored) -> None:
    schema = _schema()
    problems: list[str] = []
    cases = 0

    def check(case) -> None:
        nonlocal cases
        cases += 1
        problems.extend(_problems(case, server))

    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12  # every operation the API documents
    for operation in operations:
        hypothesis_settings = settings(
            schema.config.get_hypothesis_settings(operation=operation, phase="fuzzing"),
            phases=NO_SHRINKING,
            suppress_health_check=list(HealthCheck),
        )
        test = create_test(
            operation=operation,
            test_func=check,
            config=HypothesisTestConfig(
                project=schema.config, modes=list(HypothesisTestMode), settings=hypothesis_settings
            ),
        )
        try:
            test()
        except Unsatisfiable:
            continue  # no negative case (GET /api/v1/games takes no parameters)
    assert cases > 1000  # every operation's boundaries both ways, its fuzzing both ways
    assert problems == [], "\n".join(problems)


def test_the_stateful_phase(server: SignedClient, stored) -> None:
    schema = _schema()
    problems: list[str] = []
    steps: list[str] = []

    class Signed(schema.as_state_machine()):  # type: ignore[misc]
        wrote = False

        def teardown(self) -> None:
            # each scenario from the same stored state: what a call answers then depends only
            # on the scenario (hypothesis replays the start of a scenario to try another end,
            # and a replay answered otherwise is a FlakyStrategyDefinition). Only after a
            # scenario that stored something: a reset costs about a third of a second.
            if self.wrote:
                reset_results()
                submit(server, "m-1", [{"player": "p1", "board": "rating", "score": 10}])

        def call(self, case, **kwargs: Any) -> Response:
            # the fixture's game: a signature of another game is a 403 before anything is
            # checked (the game's form is the other phases' to try)
            if "game" in (case.path_parameters or {}):
                case.path_parameters = {**case.path_parameters, "game": REAL_IDS["game"]}
            response, self.signed_headers = signed_call(case, server)
            steps.append(f"{case.method} {case.path} {response.status_code}")
            self.wrote |= case.method != "GET" and 200 <= response.status_code < 300 and not _all_rejected(response)
            return Response.from_wsgi(response)

        def validate_response(self, response: Response, case, additional_checks=None, **kwargs: Any) -> None:
            what = f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r}"
            try:
                case.validate_response(
                    response,
                    excluded_checks=OURS_INSTEAD,
                    headers=self.signed_headers,
                    transport_kwargs={"app": application},
                    recorder=getattr(self, "recorder", None),  # for the checks that look at earlier steps
                )
            except (AssertionError, FailureGroup) as exc:
                problems.append(f"{what}: {exc}")
            if response.status_code >= 500 or _refused_though_allowed(case, response):
                problems.append(f"{response.status_code} {_error_code(response)}: {what}")

    Signed.run(
        settings=settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=STATEFUL_STEPS,
            deadline=None,
            derandomize=True,
            phases=NO_SHRINKING,
            suppress_health_check=list(HealthCheck),
        )
    )
    assert len(steps) > 2 * STATEFUL_SCENARIOS  # scenarios of two steps and more
    assert "POST /api/v1/games/{game}/matches/batch 200" in steps  # beyond the first call
    assert problems == [], "\n".join(problems)


def _all_rejected(response) -> bool:
    """A batch that stored nothing (each of its matches rejected)."""
    results = json.loads(response.get_data()).get("results") if response.is_json else None
    return isinstance(results, list) and all(item.get("status") == "rejected" for item in results)


def _error_code(response) -> str | None:
    content = response.get_data() if hasattr(response, "get_data") else response.content
    try:
        body = json.loads(content)
    except ValueError:
        return None
    return body.get("error", {}).get("code") if isinstance(body, dict) else None


def _message(response) -> str:
    content = response.get_data() if hasattr(response, "get_data") else response.content
    try:
        return json.loads(content)["error"]["message"][:160]
    except (ValueError, KeyError, TypeError):
        return ""


def _variants(case):
    """The case with the fixture's game (a signature of another game is a 403 before anything
    is checked), and for positive cases also with every path id real."""
    path = case.meta.components.get(ParameterLocation.PATH) if case.meta else None
    generated = dict(case.path_parameters or {})
    if path is not None and path.mode.is_negative:
        yield generated  # the path itself is what is wrong: keep it
        if generated.get("game", REAL_IDS["game"]) != REAL_IDS["game"]:
            # and with the fixture's game, so that a wrong id after it meets the view, not a 403
            # (where the game was the wrong part, the path may now be right: _accepted_against_its_form)
            yield {**generated, "game": REAL_IDS["game"]}
        return
    yield {**generated, "game": REAL_IDS["game"]} if "game" in generated else generated
    if case.meta.generation.mode.is_positive:
        yield {name: REAL_IDS.get(name, value) for name, value in generated.items()}


def _problems(case, server: SignedClient) -> list[str]:
    found = []
    for path_parameters in _variants(case):
        case.path_parameters = path_parameters
        response, headers = signed_call(case, server)
        code = _error_code(response)
        what = f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r}"
        try:
            case.validate_response(
                response, excluded_checks=OURS_INSTEAD, headers=headers, transport_kwargs={"app": application}
            )
        except (AssertionError, FailureGroup) as exc:
            found.append(f"{what}: {exc}")
        if response.status_code >= 500:
            found.append(f"{response.status_code} {code}: {what}")
        elif _refused_though_allowed(case, response):
            found.append(
                f"schema allows, service refuses ({response.status_code} {code}: {_message(response)}): {what}"
            )
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


def _refused_though_allowed(case, response) -> bool:
    """A request the schema allows, refused for anything but data (EXCUSED, UNSTATABLE)."""
    return (
        case.meta is not None
        and case.meta.generation.mode.is_positive
        and case.method == case.operation.method.upper()
        and _sent_path_keeps_its_form(case)
        and 400 <= response.status_code < 500
        and _error_code(response) not in EXCUSED
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
    if negated == [ParameterLocation.PATH] and _sent_path_keeps_its_form(case):
        return False  # a `%XX` decoded into an id of its form (see _sent_path_keeps_its_form)
    if ParameterLocation.QUERY in negated and any(isinstance(v, dict) for v in (case.query or {}).values()):
        # a query carries text: an object is sent as what urlencode makes of it, its keys
        # (`{"": {}}` is `state=`, which the schema allows: allowEmptyValue)
        return False
    declared = {p.name for p in case.operation.query}
    return not (ParameterLocation.QUERY in negated and set(case.query or {}) - declared)


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


@functools.cache
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
