"""The OpenAPI schema's generator: drf-spectacular's, stating two kinds of limit it leaves out,
so that the schema allows no request the service refuses for its form (docs/api.md §15):

- path parameters: Django's `<str:...>` converter says only "string"; the forms of docs/api.md
  §1.1 and §1.2 are added by the parameter's name, the same name on every route;
- item counts of a nested list (`SomeSerializer(many=True, min_length=1, max_length=100)`),
  which drf-spectacular drops (it states them for a ListField only);
- what DRF's CharField does to text sent to it: it refuses NUL, and trims whitespace before
  checking that the text is not blank (a field that may be blank says so in one schema, not a
  `oneOf` whose two branches both take "");
- that an optional query parameter sent empty (`?window=`) means the same as one not sent:
  DRF reads a query as a form does (`allowEmptyValue`)."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import is_list_serializer
from rest_framework import serializers

from scores.api.common import TextField
from scores.ids import MATCH_ID_RE, PLAYER_RE, SLUG_RE
from scores.windows import EXPLICIT_WINDOW_RE

PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "game": {"pattern": SLUG_RE, "maxLength": 64},
    "board": {"pattern": SLUG_RE, "maxLength": 64},
    "player": {"pattern": PLAYER_RE, "maxLength": 64},
    "match_id": {"pattern": MATCH_ID_RE, "maxLength": 128},
    "window": {"pattern": EXPLICIT_WINDOW_RE},  # only the frozen standings take a window in the path
}

# the whitespace str.strip() removes (DRF's trim), as a character class
_SPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK_TEXT = rf"^[^\x00]*[^\x00{_SPACE}][^\x00]*$"
ANY_TEXT = r"^[^\x00]*$"


# the second branch drf-spectacular adds to a blank-allowing string with a pattern or a format
_BLANK_BRANCH = {"type": "string", "maxLength": 0}


def _takes_blank(form: dict[str, Any]) -> bool:
    """Whether a string schema of these keywords takes "" by itself (False when unsure)."""
    if set(form) - {"type", "pattern", "maxLength", "minLength"} or form.get("minLength", 0) > 0:
        return False  # a format, an enum...
    try:
        return re.search(form.get("pattern", ""), "") is not None
    except re.error:
        return False  # an ECMA pattern Python cannot read


class AutoSchema(SpectacularAutoSchema):
    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation = super().get_operation(*args, **kwargs)
        for parameter in (operation or {}).get("parameters", []):
            if parameter["in"] == "query" and not parameter.get("required"):
                parameter["allowEmptyValue"] = True
        return operation

    def _resolve_path_parameters(self, variables: list[str]) -> list[dict[str, Any]]:
        parameters = super()._resolve_path_parameters(variables)
        for parameter in parameters:
            form = PATH_PARAMETERS.get(parameter["name"])
            if form is not None and parameter["schema"].get("type") == "string":
                parameter["schema"] = {**parameter["schema"], **form}
        return parameters

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        super()._insert_field_validators(field, schema)
        # A blank-allowing field with a pattern or a format comes back as oneOf [its form,
        # maxLength 0]. oneOf means exactly one branch: where the form takes "" too (ANY_TEXT),
        # "" matches both and a validator refuses the "" the service accepts. Such a form says it
        # alone; any other gets minLength 1, which takes nothing from what the two allow together
        # (the second branch has ""), so no value matches both, even where a format goes unchecked.
        branches = schema.get("oneOf")
        if not (isinstance(branches, list) and len(branches) == 2 and branches[1] == _BLANK_BRANCH):
            return
        form = branches[0]
        if _takes_blank(form):
            del schema["oneOf"]
            schema.update(form)
        elif form.get("minLength", 0) < 1:
            form["minLength"] = 1

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> Any:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if is_list_serializer(field) and isinstance(schema, dict) and schema.get("type") == "array":
            min_items, max_items = getattr(field, "min_length", None), getattr(field, "max_length", None)
            if min_items is not None:
                schema["minItems"] = min_items
            if max_items is not None:
                schema["maxItems"] = max_items
        elif (
            direction == "request"
            # not a RegexField, a ChoiceField...: they say their form
            and type(field) in (serializers.CharField, TextField)
            and isinstance(schema, dict)
            and "pattern" not in schema
        ):
            schema["pattern"] = NOT_BLANK_TEXT if field.trim_whitespace and not field.allow_blank else ANY_TEXT
        return schema
