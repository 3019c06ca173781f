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

import json
import re
from typing import Any

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from rest_framework import exceptions
from rest_framework.views import APIView

from leaderboard_project.errors import exception_handler
from leaderboard_project.parsers import json_parse

JSON = "application/json"
_JSON_RANGES = frozenset({"*/*", "application/*", JSON})


class PlainApiView(APIView):
    """A hot endpoint's view: a request of `plain_methods` goes to the handler of its method
    (`get` for HEAD too, as Django's View does) with Django's own request, and its errors are
    answered as DRF's exception handler words them (exception_response). DRF's `dispatch`
    serves the other methods (OPTIONS, 405), and drf-spectacular reads the decorated handlers
    and the view's classes (authentication, throttles) for the schema."""

    plain_methods: tuple[str, ...] = ()
    allow = ""  # the Allow header: what DRF's APIView answers for the view
    authenticate: str | None = None  # a 401's WWW-Authenticate; None: a 403, as in DRF

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        method = request.method or ""
        if method not in self.plain_methods:
            return super().dispatch(request, *args, **kwargs)
        self.args, self.kwargs = args, kwargs
        handler = self.get if method == "HEAD" else getattr(self, method.lower())  # type: ignore[attr-defined]
        try:
            return handler(request, **kwargs)
        except (exceptions.APIException, RequestDataTooBig) as exc:
            return exception_response(exc, allow=self.allow, authenticate=self.authenticate)


def json_response(body: dict[str, Any], status: int = 200, *, allow: str) -> HttpResponse:
    response = HttpResponse(json_bytes(body), content_type=JSON, status=status)
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


def json_bytes(body: dict[str, Any]) -> bytes:
    """The body as DRF's JSONRenderer writes it (compact, UTF-8, U+2028/9 escaped), byte for
    byte. orjson writes the same bytes several times faster, except for floats Python writes
    with an exponent (below 1e-4, from 1e16: orjson writes `0.00001` for `1e-05`, `1e-7` for
    `1e-07`) and integers beyond 64 bits (it refuses them); a body with either, and any orjson
    refuses, is written by the standard library as before (tests/boards/test_read_path.py
    compares the two on generated values). U+2028/9 are escaped as DRF does (orjson leaves them
    raw)."""
    try:
        out = orjson.dumps(body)
    except orjson.JSONEncodeError:
        return _stdlib_json_bytes(body)
    if _EXPONENT.search(out) is not None or b"0.0000" in out:
        return _stdlib_json_bytes(body)
    if b"\xe2\x80\xa8" in out or b"\xe2\x80\xa9" in out:
        out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return out


# where orjson's float spelling may differ from Python's: an exponent (orjson writes `1e16`,
# `1e-7`), or four zeros after the point; also matches such text inside a string, which only
# costs the slower, identical path. The pattern starts with a literal, so the search skips
# from one "e" to the next: the former `[0-9]e` tried every byte (0.8 ms on a 200-friend body)
_EXPONENT = re.compile(rb"e[-+]?[0-9]")


def _stdlib_json_bytes(body: dict[str, Any]) -> bytes:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()
