"""Course figures drawn from computed values, saved as reproducible SVG."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

_STYLE = {
    "svg.hashsalt": "jax-course",  # stable element ids, so a rebuild gives the same bytes
    "svg.fonttype": "none",
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
COLORS = ("#3b6ea8", "#e08b2c", "#5a9e5a", "#9c5fa8")


def save(fig, figures_dir: str | Path, name: str) -> Path:
    """Write ``fig`` to ``figures_dir/name`` (created if needed) without a timestamp."""
    folder = Path(figures_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with plt.rc_context(_STYLE):
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    return path


def bar_panel(ax, labels, series, ylabel, value_format="{:.3g}"):
    """Grouped bars: one group per label, one bar per series, each value printed."""
    width = 0.8 / len(series)
    positions = np.arange(len(labels))
    for i, (name, values) in enumerate(series):
        offsets = positions - 0.4 + width * (i + 0.5)
        bars = ax.bar(offsets, values, width * 0.92, label=name, color=COLORS[i % len(COLORS)])
        ax.bar_label(bars, labels=[value_format.format(v) for v in values], padding=2, fontsize=8)
    ax.set_xticks(positions, labels)
    ax.set_ylabel(ylabel)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.margins(y=0.18)
    if len(series) > 1:
        ax.legend(frameon=False)


def paired_bars(labels, series, ylabel, title):
    """One panel of grouped bars; returns the figure."""
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6, 3.6))
        bar_panel(ax, labels, series, ylabel)
        ax.set_title(title)
        fig.tight_layout()
    return fig
