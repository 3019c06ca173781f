"""Template filters for the player pages."""

from django import template

from scores.formats import score_format

register = template.Library()


@register.filter
def num(value: object) -> str:
    """12345 -> "12,345" (the same grouping static/js/live.js uses)."""
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value)


@register.filter
def score(value: object, fmt: str = "integer") -> str:
    """A score as its board's `format` shows it (scores/formats.py; static/js/format.js)."""
    if isinstance(value, int):
        return score_format(value, fmt or "integer")
    return "" if value is None else str(value)
