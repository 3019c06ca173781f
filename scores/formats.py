"""How a board's scores read to people (`format` in the game's TOML, docs/api.md §2.2):
"integer" (12,345), "duration_ms" (4:41.897 for 281,897 ms) or "decimal:N" (N digits after
the point: 1,234.56 for 123,456 with decimal:2). Only the pages format; the API always answers
the integer. static/js/format.js is the same in the browser (tests/e2e checks they agree)."""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"^decimal:([1-9])$")
EXPECTED = 'one of "integer", "duration_ms", "decimal:N" (N from 1 to 9 digits after the point)'


def is_valid(fmt: str) -> bool:
    return fmt in ("integer", "duration_ms") or bool(_DECIMAL.match(fmt))


def score_format(value: int, fmt: str = "integer") -> str:
    """An integer score as the board's format shows it."""
    sign = "-" if value < 0 else ""
    n = abs(value)
    if fmt == "duration_ms":
        seconds, ms = divmod(n, 1000)
        minutes, s = divmod(seconds, 60)
        hours, m = divmod(minutes, 60)
        if hours:
            return f"{sign}{hours:,}:{m:02d}:{s:02d}.{ms:03d}"
        return f"{sign}{m}:{s:02d}.{ms:03d}"
    if match := _DECIMAL.match(fmt):
        digits = int(match[1])
        whole, frac = divmod(n, 10**digits)
        return f"{sign}{whole:,}.{frac:0{digits}d}"
    return f"{sign}{n:,}"
