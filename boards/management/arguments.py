"""Argument types the boards' commands share."""

from __future__ import annotations

import argparse
from datetime import datetime


def rfc3339(value: str) -> datetime:
    """An RFC 3339 moment with its offset (2026-11-29T18:00:00Z): argparse's type for --now."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an RFC 3339 date-time") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} needs an offset (Z or +01:00)")
    return moment
