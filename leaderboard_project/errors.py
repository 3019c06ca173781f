"""One error body everywhere (docs/api.md §5):
{"error": {"code": "<snake_case>", "message": "<human text>"}}."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApiError(exceptions.APIException):
    """An error with a stable code. Services raise subclasses; views never build bodies."""

    status_code = status.HTTP_400_BAD_REQUEST
    code = "invalid_request"

    def __init__(self, message: str, code: str | None = None, status_code: int | None = None) -> None:
        super().__init__(detail=message)
        self.message = message
        if code:
            self.code = code
        if status_code:
            self.status_code = status_code


class NotFound(ApiError):
    status_code = status.HTTP_404_NOT_FOUND
    code = "not_found"


class Conflict(ApiError):
    status_code = status.HTTP_409_CONFLICT
    code = "conflict"


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def error_response(code: str, message: str, status_code: int) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status_code)


def read_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A plain Django view that serves GET and HEAD: any other method is the 405 of docs/api.md
    §14, worded as DRF words it on the API's views, not the page's answer to a read. Exempt from
    the CSRF check, as the API's views are: it changes nothing, and a refusal is this 405, not
    the CSRF failure page."""

    @csrf_exempt
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            response = error_response("method_not_allowed", f'Method "{request.method}" not allowed.', 405)
            response["Allow"] = "GET, HEAD"
            return response
        return view(request, *args, **kwargs)

    return wrapped


_DRF_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.ParseError: "invalid_json",
    exceptions.Throttled: "rate_limited",
    exceptions.ValidationError: "invalid_body",
}


def flatten_detail(detail: Any, prefix: str = "") -> str:
    """A readable one-line message from DRF's nested validation detail."""
    if isinstance(detail, dict):
        parts = []
        for key, value in detail.items():
            name = key if key != "non_field_errors" else ""
            path = f"{prefix}.{name}" if prefix and name else (name or prefix)
            parts.append(flatten_detail(value, path))
        return "; ".join(p for p in parts if p)
    if isinstance(detail, list):
        if all(isinstance(d, (str, exceptions.ErrorDetail)) for d in detail):
            text = " ".join(str(d) for d in detail)
            return f"{prefix}: {text}" if prefix else text
        return "; ".join(flatten_detail(d, f"{prefix}[{i}]") for i, d in enumerate(detail) if d)
    return f"{prefix}: {detail}" if prefix else str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        return Response(error_body("payload_too_large", "request body is too large"), status=413)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or "forbidden")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        code, message = exc.code, exc.message
    else:
        code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), "error")
        message = flatten_detail(exc.detail) if isinstance(exc, exceptions.APIException) else str(exc)
    response.data = error_body(code, message)
    return response


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class ErrorBodySerializer(serializers.Serializer):
    """The schema of every error response."""

    error = ErrorSerializer()


# The public reads' per-address limit (leaderboard_project/limits.py, docs/api.md §15), as the
# schema lists it on each of them
RATE_LIMITED = OpenApiResponse(
    ErrorBodySerializer, description="too many requests from this address: retry after `Retry-After` seconds"
)
