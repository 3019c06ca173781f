"""The hot endpoints' request and response, without DRF's per-request machinery (docs/architecture.md,
"One implementation per hot endpoint").

DRF's Request wrapper, content negotiation, parser selection, authentication loop and renderer
cost about a third of the web tier's CPU per single submission (docs/BENCHMARKS.md). The hot
endpoints answer every request themselves with these pieces instead, and DRF stays for what it
serves there: the OpenAPI schema (drf-spectacular reads the views' decorated methods) and the
other methods (OPTIONS, 405). Each answer keeps the form docs/api.md gives: the one error body
(leaderboard_project/errors.py), the statuses of docs/api.md §14, `Allow`, `Retry-After` and
`WWW-Authenticate` where DRF would send them.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from rest_framework import exceptions

from leaderboard_project.errors import exception_handler
from leaderboard_project.parsers import json_parse

JSON = "application/json"
_JSON_RANGES = frozenset({"*/*", "application/*", JSON})


def json_response(body: dict[str, Any], status: int = 200, *, allow: str) -> HttpResponse:
    response = HttpResponse(orjson.dumps(body), content_type=JSON, status=status)
    response.data = body  # type: ignore[attr-defined]  # what monitoring.metrics reads, as from DRF's Response
    response["Allow"] = allow
    return response


def exception_response(exc: Exception, *, allow: str, authenticate: str | None = None) -> HttpResponse:
    """The answer to an APIException (or RequestDataTooBig), as a DRF view gives it: the
    project's exception handler decides status, body and Retry-After; a 401 names its
    authentication scheme (`authenticate`), and without one it is a 403, as in DRF."""
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        if authenticate is None:
            exc.status_code = 403
        else:
            exc.auth_header = authenticate  # type: ignore[union-attr]  # DRF's handler sends it; not in the stubs
    handled = exception_handler(exc, {})
    if handled is None:
        raise exc
    response = json_response(handled.data, handled.status_code, allow=allow)
    for header in ("Retry-After", "WWW-Authenticate"):
        if header in handled:
            response[header] = handled[header]
    return response


def accepts_json(request: HttpRequest) -> None:
    """Raises NotAcceptable (406) unless the Accept header admits JSON (none at all does)."""
    header = request.META.get("HTTP_ACCEPT", "")
    if not header:
        return
    for part in header.split(","):
        if part.split(";", 1)[0].strip().lower() in _JSON_RANGES:
            return
    raise exceptions.NotAcceptable("Could not satisfy the request Accept header.")


def json_body(request: HttpRequest) -> Any:
    """The request's JSON body. Raises ParseError (400 invalid_json) for no body at all
    (whatever its Content-Type says), UnsupportedMediaType (415) for another Content-Type, ParseError
    for a body that is not JSON or is nested too deep, RequestDataTooBig (413) over Django's
    upload limit."""
    raw = request.body  # RequestDataTooBig over DATA_UPLOAD_MAX_MEMORY_SIZE: exception_response's 413
    if not raw:
        raise exceptions.ParseError("JSON parse error - the body is empty")
    content_type = request.META.get("CONTENT_TYPE", "")
    media, _, params = content_type.partition(";")
    if media.strip().lower() != JSON:
        raise exceptions.UnsupportedMediaType(content_type)
    charset = "utf-8"
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    return json_parse(raw, charset)
