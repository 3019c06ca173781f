"""The one parse of a submitted match (docs/api.md §4.1): JSON as read by
leaderboard_project.plain.json_body in, a scores.ingest.MatchIn out, or BodyInvalid (400
`invalid_body`) naming the first field that is wrong, as `results[0].score: ...`.

Both submission endpoints use it, a batch once per match. It accepts exactly what the documented
schema (scores/api/match_schema.py) allows: tests/scores/test_match_body.py holds the two
together on generated bodies. Ids are taken as sent, never trimmed (docs/api.md §1.1); a
display name is trimmed, as DRF's CharField would, so `" Bo "` and `"Bo"` are the same match.
Unknown keys are ignored."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from leaderboard_project.errors import ApiError
from scores import ids, ingest
from scores.ids import MATCH_ID_RE, PLAYER_RE, SLUG_RE

MAX_METADATA_BYTES = 1024
MAX_RESULTS = 100
MAX_BATCH = 1000
MAX_TEXT = 64  # ids, boards, regions and display names
MAX_MATCH_ID = 128

# ended_at outside these years is refused as a date-time (year 1 or 9999 shifted by an offset
# leaves the range datetime can hold; no real match ended before 1970)
ENDED_AT_MIN = datetime(1970, 1, 1, tzinfo=UTC)
ENDED_AT_MAX = datetime(9999, 1, 1, tzinfo=UTC)
ENDED_AT_INVALID = "must be an RFC 3339 date-time with an offset, e.g. 2026-11-29T18:59:58Z"
ENDED_AT_RANGE = "must be between 1970-01-01T00:00:00Z and 9999-01-01T00:00:00Z"

_UNSAFE_TEXT = re.compile("[\x00\ud800-\udfff]")  # NUL, and what no UTF-8 encoder takes
_MISSING = object()


class BodyInvalid(ApiError):
    code = "invalid_body"


def id_form(regex: str) -> str:
    return f"must be exactly of the form {regex}, with nothing around it"


def ended_at_parse(value: Any) -> datetime:
    """The instant an RFC 3339 date-time names, in UTC. Raises ValueError with the message."""
    if type(value) is not str or "T" not in value.upper():
        raise ValueError(ENDED_AT_INVALID)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(ENDED_AT_INVALID) from None
    if when.tzinfo is None:
        raise ValueError(ENDED_AT_INVALID)
    try:
        in_utc = when.astimezone(UTC)
    except OverflowError:
        raise ValueError(ENDED_AT_RANGE) from None
    if not ENDED_AT_MIN <= in_utc < ENDED_AT_MAX:
        raise ValueError(ENDED_AT_RANGE)
    # the instant, in UTC: RFC 3339 offsets go to ±23:59, Postgres' to ±15:59 (it refused
    # "-22:02" as a 500); the offset means nothing once the instant is known
    return in_utc


def metadata_too_large(metadata: dict[str, Any]) -> bool:
    return len(json.dumps(metadata, separators=(",", ":")).encode()) > MAX_METADATA_BYTES


def _field(raw: dict[str, Any], name: str, where: str, *, required: bool = True) -> Any:
    value = raw.get(name, _MISSING)
    if value is _MISSING:
        if required:
            raise BodyInvalid(f"{where}{name}: This field is required.")
        return None
    if value is None:
        raise BodyInvalid(f"{where}{name}: This field may not be null.")
    return value


def _id(value: Any, path: str, is_id: Any, regex: str, max_length: int) -> str:
    if type(value) is str and len(value) > max_length:
        raise BodyInvalid(f"{path}: Ensure this field has no more than {max_length} characters.")
    if not is_id(value):
        raise BodyInvalid(f"{path}: {id_form(regex)}")
    return value


def _integer(value: Any, path: str) -> int:
    if type(value) is not int:  # "12", 12.0 and true are not scores
        raise BodyInvalid(f"{path}: A valid integer is required.")
    return value


def _list(raw: dict[str, Any], name: str, most: int) -> list[Any]:
    """A required list of 1 to `most` items."""
    value = _field(raw, name, "")
    if type(value) is not list:
        raise BodyInvalid(f'{name}: Expected a list of items but got type "{type(value).__name__}".')
    if not value:
        raise BodyInvalid(f"{name}: Ensure this field has at least 1 elements.")
    if len(value) > most:
        raise BodyInvalid(f"{name}: Ensure this field has no more than {most} elements.")
    return value


def _object_expected(value: Any) -> str:
    return f"Invalid data. Expected a dictionary, but got {type(value).__name__}."


def _result_parse(raw: Any, where: str) -> ingest.ResultIn:
    if type(raw) is not dict:
        raise BodyInvalid(f"{where[:-1]}: {_object_expected(raw)}")
    player = _id(_field(raw, "player", where), f"{where}player", ids.is_player_id, PLAYER_RE, MAX_TEXT)
    board = _id(_field(raw, "board", where), f"{where}board", ids.is_slug, SLUG_RE, MAX_TEXT)
    score = _integer(_field(raw, "score", where), f"{where}score")
    if len(raw) == 3:
        return ingest.ResultIn(player, board, score)  # the usual result: nothing optional sent
    display_name = _field(raw, "display_name", where, required=False)
    if display_name is not None:
        if type(display_name) is not str:
            raise BodyInvalid(f"{where}display_name: Not a valid string.")
        display_name = display_name.strip()
        if not display_name:
            raise BodyInvalid(f"{where}display_name: This field may not be blank.")
        if len(display_name) > MAX_TEXT:
            raise BodyInvalid(f"{where}display_name: Ensure this field has no more than {MAX_TEXT} characters.")
        if _UNSAFE_TEXT.search(display_name):
            raise BodyInvalid(f"{where}display_name: Null characters are not allowed.")
    metadata = _field(raw, "metadata", where, required=False)
    if metadata is not None:
        if type(metadata) is not dict:
            raise BodyInvalid(f"{where}metadata: must be a JSON object")
        if metadata_too_large(metadata):
            raise BodyInvalid(f"{where}metadata: must be at most {MAX_METADATA_BYTES} bytes of JSON")
    region = _field(raw, "region", where, required=False)
    if region is not None:
        region = _id(region, f"{where}region", ids.is_slug, SLUG_RE, MAX_TEXT)
    subscores = _field(raw, "subscores", where, required=False)
    if subscores is not None:
        if type(subscores) is not dict:
            raise BodyInvalid(
                f'{where}subscores: Expected a dictionary of items but got type "{type(subscores).__name__}".'
            )
        for name, value in subscores.items():
            # the board's declared names are checked against the game (scores.ingest): here, the form
            _integer(value, f"{where}subscores.{name}")
    return ingest.ResultIn(player, board, score, display_name, metadata, region, subscores)


def match_parse(raw: Any) -> ingest.MatchIn:
    """The match a parsed JSON body holds. Raises BodyInvalid naming the first wrong field."""
    if type(raw) is not dict:
        raise BodyInvalid(_object_expected(raw))
    match_id = _id(_field(raw, "match_id", ""), "match_id", ids.is_match_id, MATCH_ID_RE, MAX_MATCH_ID)
    try:
        ended_at = ended_at_parse(_field(raw, "ended_at", ""))
    except ValueError as exc:
        raise BodyInvalid(f"ended_at: {exc}") from None
    results = _list(raw, "results", MAX_RESULTS)
    parsed = tuple(_result_parse(r, f"results[{i}].") for i, r in enumerate(results))
    return ingest.MatchIn(match_id=match_id, ended_at=ended_at, results=parsed)


def batch_parse(raw: Any) -> list[Any]:
    """The matches of a batch body, each still to be parsed on its own (one bad match is
    rejected alone, docs/api.md §4.2). Raises BodyInvalid when the body is not 1-1000 of them."""
    if type(raw) is not dict:
        raise BodyInvalid(_object_expected(raw))
    return _list(raw, "matches", MAX_BATCH)
