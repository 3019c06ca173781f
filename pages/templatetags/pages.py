"""Template filters for the player pages."""

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

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


@register.filter
def ago(moment: datetime | None) -> str:
    """How long ago: "just now" under a minute, else "4 minutes ago"."""
    if moment is None:
        return ""
    if (timezone.now() - moment).total_seconds() < 60:
        return "just now"
    return f"{timesince(moment)} ago"
