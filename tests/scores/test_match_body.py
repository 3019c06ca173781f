"""The one parse of a submitted match (scores/api/match_body.py) accepts exactly what the
documented schema's serializers (scores/api/match_schema.py, what the OpenAPI schema is made
from) accept, as the same match, and refuses the rest naming a field. DRF's serializers are the
oracle here only: no request goes through them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from scores import ingest
from scores.api.match_body import BodyInvalid, match_parse
from scores.api.match_schema import MatchInSerializer
from tests.properties import examples

# whitespace and control characters around an id: refused by both (docs/api.md §1.1), never trimmed
ODD_TEXT = st.sampled_from(
    ["", " ", "p1 ", " p1", "p\n", "p1\n", "\tx\n", "a b", "x" * 64, "x" * 65, "\x00", "p\x00", "é", "p1", "P_9.:@-"]
)
TEXTISH = st.one_of(ODD_TEXT, st.text(max_size=70), st.integers(), st.none(), st.booleans(), st.floats())


GOOD_RESULT = st.fixed_dictionaries(
    {
        "player": st.sampled_from(["p1", "A-b_c.d:e@f", "x" * 64]),
        "board": st.sampled_from(["rating", "a-1"]),
        "score": st.integers(min_value=-(10**6), max_value=10**6),
    },
    optional={
        "display_name": st.sampled_from(["Bo", "x" * 64, "日本"]),
        "metadata": st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
        "region": st.sampled_from(["eu", "us-1"]),
        # sub-score names (docs/game-config.md): any name parses; the game's boards judge it
        "subscores": st.dictionaries(
            st.sampled_from(["kills", "time_ms", "Kills", "_x", "a b"]), st.integers(), max_size=2
        ),
    },
)
# One field replaced by something odd: a wrong type, whitespace DRF would trim, a value DRF
# would coerce, a length or pattern at the edge.
ODD_RESULT_FIELD = st.tuples(
    st.sampled_from(["player", "board", "score", "display_name", "metadata", "region", "extra", None]),
    st.one_of(
        ODD_TEXT,
        TEXTISH,
        st.integers(min_value=-(10**20), max_value=10**20),
        st.sampled_from([True, 1.0, "12", [1], {"x": "y" * 1100}]),
    ),
)


@st.composite
def result_strategy(draw: st.DrawFn) -> Any:
    result = dict(draw(GOOD_RESULT))
    if draw(st.booleans()):
        key, value = draw(ODD_RESULT_FIELD)
        if key is None:
            return value
        result[key] = value
    return result


@st.composite
def match_strategy(draw: st.DrawFn) -> Any:
    match: dict[str, Any] = {
        "match_id": draw(st.sampled_from(["m-1", "x" * 128, "~!"])),
        "ended_at": draw(st.sampled_from(["2026-11-29T18:59:58Z", "2026-11-29T18:59:58.123+02:00"])),
        "results": draw(st.lists(result_strategy(), min_size=1, max_size=3)),
    }
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        key = draw(st.sampled_from(["match_id", "ended_at", "results"]))
        match[key] = draw(
            st.one_of(
                TEXTISH,
                st.sampled_from(
                    [
                        "m 1",
                        " m",
                        "m\t",
                        "m\n",
                        " ws-1 ",
                        "x" * 129,
                        "2026-11-29 18:59:58Z",
                        "2026-11-29T18:59:58",
                        "yesterday",
                        "2026-13-01T00:00:00Z",
                        "2026-11-29t18:59:58z",
                        [],
                        "x",
                    ]
                ),
            )
        )
    return match


MATCH = st.one_of(match_strategy(), match_strategy(), match_strategy(), st.lists(st.integers(), max_size=2), st.none())


def drf(raw: Any) -> ingest.MatchIn | str:
    try:
        data = MatchInSerializer().run_validation(raw)
    except serializers.ValidationError:
        return "invalid"
    return ingest.MatchIn(
        match_id=data["match_id"],
        ended_at=data["ended_at"],
        results=tuple(ingest.ResultIn(**r) for r in data["results"]),
    )


def parsed(raw: Any) -> ingest.MatchIn | str:
    try:
        return match_parse(raw)
    except BodyInvalid as exc:
        assert exc.status_code == 400 and exc.code == "invalid_body" and exc.message
        return "invalid"


@settings(max_examples=examples(loop=200, deep=600), deadline=None)
@given(MATCH)
def test_the_parse_agrees_with_the_documented_schema(raw: Any) -> None:
    got = parsed(raw)
    assert got == drf(raw)
    event("accepted" if got != "invalid" else "refused")


def test_the_usual_match_parses() -> None:
    raw = {
        "match_id": "m-1",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [
            {"player": "p1", "board": "rating", "score": 5},
            {"player": "p2", "board": "rating", "score": 7, "display_name": "Bo", "metadata": {"k": 1}, "region": "eu"},
            {"player": "p3", "board": "rating", "score": 7, "subscores": {"time_ms": 4200, "kills": 3}},
        ],
    }
    match = match_parse(raw)
    assert match == drf(raw)
    assert match.results[2].subscores == {"time_ms": 4200, "kills": 3}


def test_ids_with_whitespace_around_them_are_refused_naming_the_field() -> None:
    good = {
        "match_id": "m-1",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": "p", "board": "b", "score": 1}],
    }
    for key, value, named in [
        ("match_id", " m-1 ", "match_id"),
        ("match_id", "m-1\n", "match_id"),
        ("player", "wsp ", "results[0].player"),
        ("player", "\tx\n", "results[0].player"),
        ("board", " b", "results[0].board"),
    ]:
        raw = {**good, "results": [{**good["results"][0]}]}
        if key == "match_id":
            raw[key] = value
        else:
            raw["results"][0][key] = value
        with pytest.raises(BodyInvalid, match=re.escape(named)):
            match_parse(raw)
        assert drf(raw) == "invalid"


def test_a_display_name_is_trimmed_as_the_schema_says() -> None:
    raw = {"match_id": "m", "ended_at": "2026-11-29T18:59:58Z", "results": [{"player": "p", "board": "b", "score": 1}]}
    raw["results"][0]["display_name"] = "  Bo "
    assert match_parse(raw).results[0].display_name == "Bo"
    raw["results"][0]["display_name"] = "   "
    with pytest.raises(BodyInvalid, match="display_name: This field may not be blank"):
        match_parse(raw)


def test_a_hundred_and_one_results_are_refused() -> None:
    raw = {
        "match_id": "m",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": "p", "board": "b", "score": 1}] * 101,
    }
    with pytest.raises(BodyInvalid, match="results: Ensure this field has no more than 100 elements"):
        match_parse(raw)
    assert drf(raw) == "invalid"
