"""PNG plots of a run (matplotlib, Agg backend: no display needed): latency percentiles and
throughput per scenario, anchors drawn in grey beside the service's own figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: a headless machine has no display

import matplotlib.pyplot as plt  # noqa: E402

ANCHOR_COLOR = "#9e9e9e"
SERVICE_COLOR = "#1f77b4"
PERCENTILE_COLORS = {"p50": "#4c9be8", "p95": "#f0a030", "p99": "#d0453b"}


def latency_plot(rows: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Grouped bars p50/p95/p99 (ms, log scale) for every row with latencies."""
    rows = [r for r in rows if r.get("latency_ms") and r["latency_ms"].get("p50") is not None]
    fig, ax = plt.subplots(figsize=(11, 5.5))
    width = 0.26
    for offset, name in enumerate(("p50", "p95", "p99")):
        xs = [i + (offset - 1) * width for i in range(len(rows))]
        values = [max(r["latency_ms"][name] or 0.0, 0.001) for r in rows]
        ax.bar(xs, values, width, label=name, color=PERCENTILE_COLORS[name])
    ax.set_yscale("log")
    ax.set_ylabel("latency, ms (log scale)")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([_label(r) for r in rows], rotation=30, ha="right", fontsize=8)
    for tick, r in zip(ax.get_xticklabels(), rows, strict=True):
        if r.get("anchor_of"):
            tick.set_color("dimgray")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend()
    return _save(fig, ax, path, title)


def throughput_plot(rows: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Horizontal bars of each row's throughput (log scale), anchors grey, with their units."""
    rows = [r for r in rows if r.get("throughput")]
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rows) + 1.6))
    ys = list(range(len(rows)))[::-1]
    values = [r["throughput"] for r in rows]
    colors = [ANCHOR_COLOR if r.get("anchor_of") else SERVICE_COLOR for r in rows]
    ax.barh(ys, values, color=colors)
    ax.set_xscale("log")
    ax.set_yticks(ys)
    ax.set_yticklabels([_label(r) for r in rows], fontsize=8)
    for y, r in zip(ys, rows, strict=True):
        ax.text(r["throughput"], y, f" {r['throughput']:,.0f} {r['unit']}", va="center", fontsize=7)
    ax.set_xlabel("throughput (log scale); grey: anchors")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.set_xlim(right=max(values) * 8 if values else 1)
    return _save(fig, ax, path, title)


def _save(fig: Any, ax: Any, path: Path, title: str) -> Path:
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _label(row: dict[str, Any]) -> str:
    load = row.get("load", "")
    return f"{row['scenario']} ({load})" if load else row["scenario"]
