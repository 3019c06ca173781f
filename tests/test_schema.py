"""schemathesis against /api/schema/ (issue 12, item 11): every operation, a bounded number of
generated requests each, signed the way a game server signs (contract section 3), and every
built-in check (`--checks all`): no 5xx, answers that keep to the documented schema, bodies
the schema forbids refused with a 4xx."""

from __future__ import annotations

import json
from urllib.parse import quote, unquote, urlencode

import schemathesis
from django.utils.encoding import escape_uri_path
from hypothesis import HealthCheck, given, settings
from leaderboard_client.signing import sign
from schemathesis.core import NotSet
from werkzeug.test import Client as WsgiClient

from leaderboard_project.wsgi import application
from tests.boards.conftest import submit
from tests.conftest import SignedClient

EXAMPLES_PER_OPERATION = 12


def signed_call(case, server: SignedClient):
    """Send the case as a game server would: the exact bytes and path signed."""
    raw_path = unquote(case.formatted_path)
    path = escape_uri_path(raw_path)
    query = urlencode(case.query or {}, doseq=True, quote_via=quote)
    body = b"" if isinstance(case.body, NotSet) else json.dumps(case.body).encode()
    signed_path = f"{path}?{query}" if query else path
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() not in ("x-key-id", "x-signature")}
    headers.update(
        {
            "Content-Type": "application/json",
            "X-Key-Id": server.key_id,
            "X-Signature": sign(server.secret, case.method, signed_path, body),
        }
    )
    return WsgiClient(application).open(
        path=path, method=case.method, query_string=query, data=body, headers=headers
    ), headers


def test_every_operation_keeps_to_its_schema(server: SignedClient, game) -> None:
    submit(server, "m-1", [{"player": "p1", "board": "rating", "score": 10}])
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12  # every operation the API documents

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck))
        def keeps_to_the_schema(case) -> None:
            response, headers = signed_call(case, server)
            case.validate_response(response, headers=headers, transport_kwargs={"app": application})

        keeps_to_the_schema()
