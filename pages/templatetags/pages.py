"""Template filters for the player pages."""

from django import template

register = template.Library()


@register.filter
def num(value: object) -> str:
    """12345 -> "12,345" (the same grouping static/js/live.js uses)."""
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value)
