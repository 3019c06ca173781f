"""Command-line pieces shared by the benchmarks."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def csv_choices(choices: tuple[str, ...]) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated, non-empty list of names among `choices`."""

    def parse(text: str) -> list[str]:
        items = [s.strip() for s in text.split(",") if s.strip()]
        unknown = [s for s in items if s not in choices]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)} (got {text!r})")
        return items

    return parse
