"""scripts/typecheck.py: the mypy baseline may only shrink, and must shrink with each fix
(docs/dev-environment.md, "The habits `make test` keeps"). mypy itself is replaced here by the
errors it would report."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from scripts import typecheck


@pytest.fixture
def baseline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(typecheck, "BASELINE", tmp_path / "mypy-baseline.txt")
    typecheck.write_baseline(Counter({"a.py: [attr-defined] one": 1, "a.py: [arg-type] two": 2}))
    return tmp_path / "mypy-baseline.txt"


def reporting(monkeypatch: pytest.MonkeyPatch, errors: dict[str, int]) -> None:
    monkeypatch.setattr(typecheck, "errors_now", lambda: Counter(errors))


def test_the_errors_of_the_baseline_pass(baseline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reporting(monkeypatch, {"a.py: [attr-defined] one": 1, "a.py: [arg-type] two": 2})
    assert typecheck.main([]) == 0


def test_a_new_error_fails_and_the_baseline_does_not_grow(baseline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reporting(monkeypatch, {"a.py: [attr-defined] one": 1, "a.py: [arg-type] two": 3})
    assert typecheck.main([]) == 1
    assert typecheck.main(["--update"]) == 1
    assert typecheck.baseline()["a.py: [arg-type] two"] == 2


def test_a_fixed_error_still_listed_fails_until_the_baseline_shrinks(
    baseline: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    reporting(monkeypatch, {"a.py: [arg-type] two": 1})
    assert typecheck.main([]) == 1
    said = capsys.readouterr().err
    assert "a.py: [attr-defined] one" in said and "a.py: [arg-type] two" in said and "--update" in said
    assert typecheck.main(["--update"]) == 0
    assert typecheck.baseline() == Counter({"a.py: [arg-type] two": 1})
    assert typecheck.main([]) == 0
