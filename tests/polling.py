"""Waiting on real processes (a projector, Celery, a web tier) for a state they reach on their own
time: poll with a deadline, never sleep a fixed time and hope."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def until(condition: Callable[[], T], what: str, *, timeout: float = 60.0, every: float = 0.1) -> T:
    """The first truthy value of condition(), polled every `every` s; the test fails with
    "<what> within <timeout> s" if none comes by then."""
    end = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > end:
            pytest.fail(f"{what} within {timeout:.0f} s")
        time.sleep(every)
    return found
