"""The board reads parse plain query parameters without their serializers: same answers."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from boards import api


@pytest.mark.parametrize("serializer", list(api.QUERY_DEFAULTS))
def test_the_fast_defaults_are_the_serializers_defaults(serializer) -> None:
    validated = serializer(data={})
    assert validated.is_valid(), validated.errors
    assert api.QUERY_DEFAULTS[serializer] == dict(validated.validated_data)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "limit=100&offset=10000&window=daily",
        "limit=1&offset=0&region=eu",
        "limit=0",
        "limit=101",
        "offset=-1",
        "offset=10001",
        "limit=ten",
        "limit=+5",
        "limit=%205",
        "window=",
        "window=all%20",
        "limit=5&limit=6",
        "around=50",
        "around=51",
        "unknown=1",
    ],
)
@pytest.mark.parametrize("serializer", list(api.QUERY_DEFAULTS))
def test_the_fast_path_answers_as_the_serializer(serializer, query: str) -> None:
    request = Request(RequestFactory().get("/?" + query))
    try:
        expected = dict(serializer(data=request.query_params).run_validation(request.query_params))
    except ValidationError:
        with pytest.raises(ValidationError):
            api.parsed_query(serializer, request)
        return
    assert api.parsed_query(serializer, request) == expected
