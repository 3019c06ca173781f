"""The submission API's fast path (scores/api.py _fast_match) never disagrees with the DRF
serializers: it either builds exactly the MatchIn they would, or steps aside (None) and lets
them decide, so every 400 body stays the serializers' own."""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from scores.api.matches import MatchInSerializer, _fast_match, _to_match
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
        # sub-score names (docs/game-config.md): `_` is theirs, not a slug's; the odd ones go to DRF
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


def drf(raw: Any):
    try:
        return _to_match(MatchInSerializer().run_validation(raw))
    except serializers.ValidationError:
        return "invalid"


@settings(max_examples=examples(loop=200, deep=600), deadline=None)
@given(MATCH)
def test_fast_path_agrees_with_the_serializers(raw: Any) -> None:
    fast = _fast_match(raw)
    expected = drf(raw)
    if fast is not None:
        assert expected == fast
    event("fast" if fast is not None else ("drf accepts" if expected != "invalid" else "drf refuses"))


def test_fast_path_takes_the_usual_match() -> None:
    raw = {
        "match_id": "m-1",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [
            {"player": "p1", "board": "rating", "score": 5},
            {"player": "p2", "board": "rating", "score": 7, "display_name": "Bo", "metadata": {"k": 1}, "region": "eu"},
            {"player": "p3", "board": "rating", "score": 7, "subscores": {"time_ms": 4200, "kills": 3}},
        ],
    }
    fast = _fast_match(raw)
    assert fast is not None and fast == drf(raw)


def test_ids_with_whitespace_around_them_are_refused_by_both() -> None:
    good = {
        "match_id": "m-1",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": "p", "board": "b", "score": 1}],
    }
    for key, value in [
        ("match_id", " m-1 "),
        ("match_id", "m-1\n"),
        ("player", "wsp "),
        ("player", "\tx\n"),
        ("board", " b"),
    ]:
        raw = {**good, "results": [{**good["results"][0]}]}
        if key == "match_id":
            raw[key] = value
        else:
            raw["results"][0][key] = value
        assert _fast_match(raw) is None and drf(raw) == "invalid", (key, value)


def test_hundred_and_one_results_go_to_the_serializers() -> None:
    raw = {
        "match_id": "m",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [{"player": "p", "board": "b", "score": 1}] * 101,
    }
    assert _fast_match(raw) is None and drf(raw) == "invalid"
