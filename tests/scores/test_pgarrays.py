"""Array literals (scores/pgarrays.py) reach Postgres as exactly the values sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scores import pgarrays

pytestmark = pytest.mark.django_db

# Postgres text cannot hold NUL; everything else must survive, quotes and backslashes included.
TEXT = st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def roundtrip(sql_type: str, literal: str) -> list:
    with connection.cursor() as cur:
        cur.execute(f"SELECT %s::{sql_type}", [literal])
        return cur.fetchone()[0]


@SETTINGS
@given(st.lists(st.one_of(st.none(), TEXT), max_size=8))
def test_texts_round_trip(values: list[str | None]) -> None:
    assert roundtrip("text[]", pgarrays.texts(values)) == values


@pytest.mark.parametrize(
    "values",
    [[], [""], ["NULL"], ["a,b", "{x}", " lead", "trail "], ['say "hi"', "back\\slash", '\\"'], ["é", "日本"]],
)
def test_texts_awkward_values(values: list[str]) -> None:
    assert roundtrip("text[]", pgarrays.texts(values)) == values


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1)), max_size=8))
def test_ints_round_trip(values: list[int | None]) -> None:
    assert roundtrip("bigint[]", pgarrays.ints(values)) == values


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2100, 1, 1)).map(
                lambda d: d.replace(tzinfo=UTC)
            ),
        ),
        max_size=6,
    ),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_timestamps_round_trip(values: list[datetime | None], offset_minutes: int) -> None:
    zone = timezone(timedelta(minutes=offset_minutes))
    sent = [v.astimezone(zone) if v is not None else None for v in values]
    assert roundtrip("timestamptz[]", pgarrays.timestamps(sent)) == values


def test_naive_timestamps_are_refused() -> None:
    with pytest.raises(ValueError):
        pgarrays.timestamps([datetime(2026, 1, 1)])
