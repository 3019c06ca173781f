"""The API's JSON parser: DRF's, plus a bound on nesting and text that is Unicode.

A body nested deeper than MAX_JSON_DEPTH is a 400 (invalid_json). Without the bound, one
nested a thousand levels raised RecursionError inside json (a 500), and one just shallow
enough to parse could exhaust the stack in whatever walked it next.

A body whose text holds a lone surrogate (`"\\udb69"`, an escape JSON's grammar allows but that
names no character) is a 400 (invalid_json) too: Python's json takes it into a str that no
UTF-8 encoder accepts, so it failed later, in Postgres or Redis, as a 500. Every view reading
JSON gets its body from json_parse (DRF's parser below, and leaderboard_project/plain.py's hot
endpoints)."""

from __future__ import annotations

import codecs
import re
from typing import Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding  # type: ignore[attr-defined]  # DRF 3.16, not in the stubs
from rest_framework.utils import json

MAX_JSON_DEPTH = 64  # a batch is 5 levels deep before its results' metadata

# the only way a surrogate gets into parsed JSON: a \uD800-\uDFFF escape (UTF-8 decoding of the
# bytes refuses encoded surrogates), so a body without one skips the walk below
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests lists and objects more than `limit` levels deep. Level by level,
    not recursively (a recursive walk would fail on exactly the bodies this refuses): about
    3 ms for a batch of 1000 matches here, 2 microseconds for a single match."""
    level = [value]
    for _ in range(limit):
        deeper: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            deeper += [v for v in items if type(v) is dict or type(v) is list]
        if not deeper:
            return False
        level = deeper
    return True


def holds_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value has a surrogate code point in any string, key or value (a
    pair of escapes for one character outside the BMP parses into that character, not two)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is str:
            if _SURROGATE.search(item):
                return True
        elif type(item) is dict:
            pending += item.keys()
            pending += item.values()
        elif type(item) is list:
            pending += item
    return False


def json_parse(raw: bytes, charset: str = "utf-8") -> Any:
    """A JSON body, in its declared charset, as every API view reads it. Raises ParseError (400
    `invalid_json`) for an unknown charset or bytes not in it, text that is not JSON (NaN and
    Infinity included, as DRF's strict parser refuses them), nested deeper than MAX_JSON_DEPTH,
    or naming a lone surrogate.

    orjson reads it, several times faster than the standard library, except where the two
    differ: orjson takes an integer beyond 64 bits as a float (a score of 10**30 must stay an
    integer, refused by the board's bounds, not as "not an integer"), refuses some bodies the
    standard library reads and words its errors otherwise. Those bodies, rare, are read by the
    standard library."""
    if charset.lower().replace("-", "") != "utf8":
        try:
            raw = codecs.decode(raw, charset).encode()
        except (LookupError, ValueError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
    if _LONG_NUMBER.search(raw) is not None:
        return _stdlib_parse(raw)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _stdlib_parse(raw)  # reads what orjson refuses, or words the error as DRF did
    _depth_check(data)
    return data  # orjson refuses lone surrogates itself


# 19 digits and more: where orjson's integers end (and a float's text might hold them too,
# which only costs the standard library's slower, identical reading)
_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def _depth_check(data: Any) -> None:
    if type(data) in (dict, list) and json_depth_exceeds(data, MAX_JSON_DEPTH):
        raise ParseError(f"JSON parse error - nested more than {MAX_JSON_DEPTH} levels deep")


def _stdlib_parse(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        data = json.loads(text, parse_constant=json.strict_constant)
    except RecursionError:
        raise ParseError(f"JSON parse error - nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:  # what DRF's parser answers (UnicodeDecodeError is one)
        raise ParseError(f"JSON parse error - {exc}") from None
    _depth_check(data)
    if _SURROGATE_ESCAPE.search(text) and holds_lone_surrogate(data):
        raise ParseError("JSON parse error - a \\u escape names a lone surrogate, not a character")
    return data


class BoundedJSONParser(JSONParser):
    """DRF's parser for the views DRF serves: the body through json_parse."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        encoding = get_encoding(parser_context or {})  # DRF's: an unknown charset is a 400
        return json_parse(stream.read() if stream is not None else b"", encoding)
