"""Sub-scores (docs/encoding.md, "Sub-scores"): the TOML table, the refusals that name the key,
and the one sorted-set number ranking (score, sub-scores, second) exactly as the reference
model orders them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scores import encoding
from scores.config import ConfigError, SubscoreSpec, parse_game_config
from scores.models import Board, PlayerValue
from scores.selectors import cached_board
from scores.services import game_config_apply
from tests.factories import PlayerFactory
from tests.reference import RefBoard, Reference

TOML = """
[game]
slug = "golf"
name = "Golf"

[[boards]]
slug = "course"
name = "Course"
order = "{order}"
mode = "{mode}"
min_score = {min_score}
max_score = {max_score}
{extra}
"""


def parse(
    extra: str, *, order: str = "asc", mode: str = "best", min_score: int = 0, max_score: int = 200
) -> tuple[SubscoreSpec, ...]:
    text = TOML.format(order=order, mode=mode, min_score=min_score, max_score=max_score, extra=extra)
    return parse_game_config(text).boards[0].subscores


def refused(extra: str, **kw: object) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        parse(extra, **kw)  # type: ignore[arg-type]
    return err.value


def test_subscores_parse_in_declared_order_with_defaults() -> None:
    subs = parse('subscores = [{name = "moves", order = "asc", max = 500}, {name = "style", min = -10, max = 10}]')
    assert subs == (
        SubscoreSpec(name="moves", order="asc", min=0, max=500),
        SubscoreSpec(name="style", order="desc", min=-10, max=10),
    )
    assert parse("") == ()


@pytest.mark.parametrize(
    ("extra", "kw", "key"),
    [
        ('subscores = [{name = "a", max = 1}] \n', {"mode": "total", "order": "desc"}, "boards[0].subscores"),
        ("subscores = [" + ", ".join(f'{{name = "s{i}", max = 1}}' for i in range(4)) + "]", {}, "boards[0].subscores"),
        ('subscores = [{name = "a", max = 1}, {name = "a", max = 2}]', {}, "boards[0].subscores[1].name"),
        ('subscores = [{name = "Not A Slug", max = 1}]', {}, "boards[0].subscores[0].name"),
        ('subscores = [{name = "a"}]', {}, "boards[0].subscores[0].max"),
        ('subscores = [{name = "a", min = 5, max = 4}]', {}, "boards[0].subscores[0].max"),
        ('subscores = [{name = "a", max = 4, order = "up"}]', {}, "boards[0].subscores[0].order"),
        ('subscores = [{name = "a", max = 4, weight = 2}]', {}, "boards[0].subscores[0].weight"),
        ('subscores = "kills"', {}, "boards[0].subscores"),
    ],
)
def test_bad_subscores_are_refused_naming_the_key(extra: str, kw: dict, key: str) -> None:
    assert refused(extra, **kw).key == key


def test_ranges_that_do_not_fit_the_sort_key_are_refused_naming_the_subscore() -> None:
    # 201 scores * 1,001 kills * 84 deaths = 16,900,884 > 2**24: the second sub-score takes it past
    fits = 'subscores = [{name = "kills", max = 1000}, {name = "deaths", order = "asc", max = 82}]'
    assert len(parse(fits)) == 2  # 201 * 1,001 * 83 = 16,699,683 fits
    err = refused('subscores = [{name = "kills", max = 1000}, {name = "deaths", order = "asc", max = 83}]')
    assert err.key == "boards[0].subscores[1].max"
    message = str(err)
    assert "201 * 1,001 * 84 = 16,900,884" in message and "16,777,216" in message
    assert "(kills: max - min + 1)" in message and "(deaths: max - min + 1)" in message
    # the score's range alone already too wide is still the score's key
    assert refused("", max_score=2**24).key == "boards[0].max_score"
    # the first sub-score that overflows is the one named
    assert (
        refused('subscores = [{name = "a", max = 100000}, {name = "b", max = 1}]').key == "boards[0].subscores[0].max"
    )


def test_apply_stores_subscores_and_refuses_changing_them_once_scored(transactional_db) -> None:
    text = TOML.format(
        order="asc", mode="best", min_score=0, max_score=200, extra='subscores = [{name = "k", order = "asc", max = 9}]'
    )
    assert game_config_apply(parse_game_config(text)) == ["created game golf", "created board course"]
    assert game_config_apply(parse_game_config(text)) == []  # the same file again changes nothing
    board = Board.objects.get(slug="course")
    assert board.subscores == [{"name": "k", "order": "asc", "min": 0, "max": 9}]
    assert cached_board("golf", board_slug="course").subscores == (SubscoreSpec("k", "asc", 0, 9),)
    PlayerValue.objects.create(
        board=board, window="all", player=PlayerFactory(game=board.game), value=1, reached_at=encoding.EPOCH,
        encoded=0, latest_at=encoding.EPOCH,
    )  # fmt: skip
    wider = text.replace("max = 9", "max = 10")
    with pytest.raises(ConfigError) as err:
        game_config_apply(parse_game_config(wider))
    assert err.value.key == "boards[0]" and "sub-scores" in str(err.value)


# --- the encoding ranks exactly as the reference model orders ---------------------------

SUBS = st.lists(
    st.tuples(st.sampled_from(["desc", "asc"]), st.integers(-50, 50), st.integers(0, 30)), min_size=0, max_size=3
)


@st.composite
def boards(draw: st.DrawFn) -> tuple[SubscoreSpec, RefBoard]:
    order = draw(st.sampled_from(["desc", "asc"]))
    mode = draw(st.sampled_from(["best", "latest"]))
    low = draw(st.integers(-1000, 1000))
    high = low + draw(st.integers(0, 400))
    subs = tuple(SubscoreSpec(name=f"s{i}", order=o, min=lo, max=lo + w) for i, (o, lo, w) in enumerate(draw(SUBS)))
    spec = parse_game_config(
        TOML.format(
            order=order,
            mode=mode,
            min_score=low,
            max_score=high,
            extra="subscores = ["
            + ", ".join(f'{{name = "{s.name}", order = "{s.order}", min = {s.min}, max = {s.max}}}' for s in subs)
            + "]",
        )
    ).boards[0]
    ref = RefBoard(
        slug="course",
        order=order,
        mode=mode,
        min_score=low,
        max_score=high,
        subscores=tuple((s.name, s.order, s.min, s.max) for s in subs),
    )
    return spec, ref


@st.composite
def results(draw: st.DrawFn, spec) -> dict:
    out: dict = {"score": draw(st.integers(spec.min_score, spec.max_score))}
    given_subs = {s.name: draw(st.integers(s.min, s.max)) for s in spec.subscores if draw(st.booleans())}
    if given_subs or draw(st.booleans()):
        out["subscores"] = given_subs
    return out


instants = st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2041, 12, 31), timezones=st.just(UTC)).map(
    lambda d: d.replace(microsecond=0)
)


@given(boards(), st.data())
def test_the_encoded_number_orders_as_the_reference_model(board, data) -> None:
    spec, ref = board
    a, b = data.draw(results(spec)), data.draw(results(spec))
    a_at, b_at = data.draw(instants), data.draw(instants)
    ea = encoding.encode(spec, a["score"], a_at, a.get("subscores"))
    eb = encoding.encode(spec, b["score"], b_at, b.get("subscores"))
    assert 0 <= ea < 2**53 and float(ea) == ea  # exact as a Redis double
    ka = (ref.rank_key(a["score"], ref.subs_of(a)), a_at)
    kb = (ref.rank_key(b["score"], ref.subs_of(b)), b_at)
    assert (ea > eb) == (ka < kb) and (ea == eb) == (ka == kb)
    assert encoding.decode_value(spec, ea) == a["score"] == encoding.value_decoder(spec)(ea)
    assert encoding.decode_subscores(spec, ea) == dict(
        zip([s.name for s in spec.subscores], ref.subs_of(a), strict=True)
    )


def test_a_best_board_keeps_the_best_whole_tuple_never_a_mix() -> None:
    board = RefBoard("course", "asc", "best", 0, 200, subscores=(("moves", "asc", 0, 500), ("style", "desc", 0, 10)))
    ref = Reference(boards={"course": board}, tz="UTC", seasons=[])

    def play(match: str, score: int, subs: dict) -> None:
        body = {
            "match_id": match,
            "ended_at": "2026-11-28T00:00:00+00:00",
            "results": [{"player": "p", "board": "course", "score": score, "subscores": subs}],
        }
        assert ref.submit(body) == 201

    play("m1", 70, {"moves": 40, "style": 2})
    play("m2", 70, {"moves": 30})  # fewer moves beats more style: this whole tuple wins
    play("m3", 70, {"moves": 30, "style": 1})  # a missing style was the worst (0): style 1 wins
    play("m4", 71, {"moves": 1, "style": 10})  # a worse score: never mixed in
    assert ref.subscores_of("course", "all", "p") == {"moves": 30, "style": 1}
    assert ref.values[("course", "all", "p")].value == 70
    bad = {"match_id": "m5", "ended_at": "2026-11-28T00:00:00+00:00"}
    for subs in ({"moves": 501}, {"speed": 3}, {"moves": "3"}, [1]):  # out of bounds, undeclared, not integers
        bad["results"] = [{"player": "p", "board": "course", "score": 5, "subscores": subs}]
        assert ref.submit(bad) == 400
