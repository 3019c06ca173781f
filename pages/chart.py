"""The score distribution of a board page as SVG geometry, drawn on the server from the
board's histogram (boards.histogram, refreshed by beat)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from boards.histogram import Histogram
from scores.formats import score_format

CHART_BARS = 40
CHART_W, CHART_H = 600, 150


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    w: float
    h: float
    label: str  # the bar's value range, formatted
    players: int  # about how many players it holds

    @property
    def title(self) -> str:
        return f"{self.label}: about {self.players:,} players"


@dataclass(frozen=True)
class Chart:
    w: int
    h: int
    bars: list[Bar]
    lo: int
    hi: int
    mid: int
    mid_x: int
    total: int
    refreshed_at: datetime | None
    better: str
    marker_x: float | None = None
    marker_value: int | None = None
    marker_right: bool = False  # the marker's label goes on the line's left
    best_x: float | None = None  # the live #1's score, when the histogram's range did not reach it
    best_value: int | None = None


def chart_build(
    hist: Histogram, marker: int | None, order: str, *, best: int | None = None, fmt: str = "integer"
) -> Chart | None:
    """The histogram as SVG bars of equal value width. Stored buckets are quantiles (about
    equal counts each), so each bucket's count is spread over the bars its range covers.

    The histogram is minutes old (refreshed by beat), the board is live: the axis reaches out
    to the live best score `best` and the viewer's `marker`, so the current #1 and the viewer
    are never beyond the chart."""
    buckets = [b for b in hist.buckets if b.count]
    if not buckets:
        return None
    lo, hi = buckets[0].min, buckets[-1].max
    beyond = best is not None and not lo <= best <= hi
    for reach in (best, marker):
        if reach is not None:
            lo, hi = min(lo, reach), max(hi, reach)
    if hi - lo < 10:  # a handful of values: widen the axis so one value is not one wall-to-wall bar
        lo, hi = lo - 5, hi + 5
    span = hi - lo + 1
    bars = min(CHART_BARS, span)
    width = span / bars
    counts = [0.0] * bars
    for b in buckets:
        if b.count == 1:
            # a bucket starts at a real player's value (its lowest encoded score: the lowest value
            # on desc boards, the highest on asc): one player in it is there (small boards)
            known = (b.min if hist.order == "desc" else b.max) - lo
            counts[min(int(known // width), bars - 1)] += 1
            continue
        b_lo, b_hi = b.min - lo, b.max - lo + 1
        first, last = int(b_lo // width), min(int((b_hi - 1e-9) // width), bars - 1)
        for i in range(first, last + 1):
            overlap = min(b_hi, (i + 1) * width) - max(b_lo, i * width)
            counts[i] += b.count * overlap / (b_hi - b_lo)
    top = max(counts) or 1.0
    bar_w = CHART_W / bars
    rects = []
    for i, c in enumerate(counts):
        h = round(c / top * (CHART_H - 22), 1)  # headroom for the marker's label
        value_lo = round(lo + i * width)
        value_hi = round(lo + (i + 1) * width) - 1
        rects.append(
            Bar(
                x=round(i * bar_w + 0.5, 1),
                y=round(CHART_H - h, 1),
                w=round(max(bar_w - 1, 0.5), 1),
                h=h,
                label=f"{score_format(value_lo, fmt)}–{score_format(max(value_hi, value_lo), fmt)}",
                players=round(c),
            )
        )
    chart = Chart(
        w=CHART_W,
        h=CHART_H,
        bars=rects,
        lo=lo,
        hi=hi,
        mid=lo + span // 2,
        mid_x=CHART_W // 2,
        total=hist.total,
        refreshed_at=hist.refreshed_at,
        better="higher is better" if order == "desc" else "lower is better",
    )
    if marker is not None and lo <= marker <= hi:
        x = round((marker - lo + 0.5) / span * CHART_W, 1)
        chart = Chart(**{**vars(chart), "marker_x": x, "marker_value": marker, "marker_right": x > CHART_W * 0.7})
    if beyond:
        x = round((best - lo + 0.5) / span * CHART_W, 1)
        chart = Chart(**{**vars(chart), "best_x": x, "best_value": best})
    return chart
