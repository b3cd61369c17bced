"""Course figures drawn from computed values, saved as reproducible SVG."""
from __future__ import annotations

import base64
import io
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba

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


def describe(fig) -> str:
    """The figure in words, from the data it was drawn from (its alternative text for readers who cannot see it):
    its title, then each panel's title, and each series' value at each label with the panel's unit; a diagram
    built by ``mechanism_diagram`` carries its own description."""
    if getattr(fig, "course_description", None):
        return fig.course_description
    said = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) is not None else []
    for ax in fig.axes:
        labels = [tick.get_text() for tick in ax.get_xticklabels()]
        panel = [ax.get_title(loc="left") or ax.get_title()]
        for container in ax.containers:
            values = getattr(container, "datavalues", [])
            pairs = ", ".join(f"{label} {value:.3g}" for label, value in zip(labels, values))
            panel.append(f"{container.get_label()}: {pairs}" + (f" ({ax.get_ylabel()})" if ax.get_ylabel() else ""))
        said.append(". ".join(part for part in panel if part))
    return ". ".join(part for part in said if part) + "."


def show(fig, figures_dir: str | Path, name: str) -> None:
    """Save ``fig`` as ``figures_dir/name``, display it below the cell, close ``fig``.

    The figure is displayed explicitly, never left to the inline backend: that backend
    shows only the first figure a kernel draws inside ``rc_context``, so later figure
    cells would show nothing. The output is an HTML image of the saved SVG whose
    alternative text says the figure's data (``describe``): JupyterLab's own image
    outputs carry no alternative text, so a screen reader would find nothing there.
    The output also holds the SVG and a PNG of the same figure, for a reader that
    renders no HTML. Closing the figure keeps it from being drawn a second time.
    ``figures_dir=None`` (the grader's runs, whose sanitized copies keep neither HTML
    nor SVG) saves nothing and displays the PNG only.
    """
    from html import escape

    from IPython.display import display

    svg = None if figures_dir is None else save(fig, figures_dir, name).read_text()
    words = describe(fig)
    png = io.BytesIO()
    with plt.rc_context(_STYLE):
        fig.savefig(png, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    bundle = {"image/png": base64.b64encode(png.getvalue()).decode("ascii"), "text/plain": f"<Figure: {name}>"}
    if svg is None:
        display(bundle, raw=True)
        return
    source = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
    html = f'<img src="{source}" alt="{escape(words, quote=True)}" style="max-width: 100%">'
    display({"text/html": html, "image/svg+xml": svg, **bundle}, raw=True)


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


def bar_panels(panels, title, figsize=(6.4, 6.0)):
    """Stacked panels of grouped bars sharing one title.

    ``panels`` is a list of ``(labels, series, ylabel, subtitle)``; ``series`` as in
    ``bar_panel``. Panels do not share a y axis: their units differ, and each panel
    gets its own colour so that observed and modeled quantities are not confused.
    """
    with plt.rc_context(_STYLE):
        fig, axes = plt.subplots(len(panels), 1, figsize=figsize, squeeze=False)
        for p, (ax, (labels, series, ylabel, subtitle)) in enumerate(zip(axes[:, 0], panels)):
            bar_panel(ax, labels, series, ylabel)
            if len(series) == 1:
                for bar in ax.containers[0]:
                    bar.set_color(COLORS[p % len(COLORS)])
            ax.set_title(subtitle, fontsize=10, loc="left")
        fig.suptitle(title)
        fig.tight_layout()
    return fig


def mechanism_diagram(stages, transitions, participants, title):
    """Which participant holds which chunk, stage by stage.

    ``stages`` is a list of ``(heading, holdings, reduced)``: ``holdings[i][k]`` is the
    value participant ``i`` holds in chunk position ``k`` (``None`` when it holds nothing
    there); ``reduced`` says whether the values are already summed over participants.
    ``transitions`` labels the arrow between consecutive stages.
    """
    chunk_colors = COLORS
    box_w, box_h, gap_x, stage_w, row_h = 0.8, 0.6, 0.1, 3.2, 1.2
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(2.6 * len(stages) + 0.6, 1.1 * len(participants) + 1.6))
        for s, (heading, holdings, reduced) in enumerate(stages):
            x0 = s * stage_w
            chunks = len(holdings[0])
            width = chunks * box_w + (chunks - 1) * gap_x
            ax.text(x0 + width / 2, 0.95, heading, ha="center", va="bottom", fontsize=10, weight="bold")
            for i, row in enumerate(holdings):
                y = -i * row_h
                for k, value in enumerate(row):
                    bx = x0 + k * (box_w + gap_x)
                    color = chunk_colors[k % len(chunk_colors)]
                    if value is None:
                        patch = plt.Rectangle((bx, y), box_w, box_h, fill=False, linestyle=(0, (2, 2)),
                                              edgecolor="#999999", linewidth=1)
                        ax.add_patch(patch)
                        continue
                    # Contributions: pale fill of the chunk's colour; sums: solid fill, thick outline.
                    # (No hatching: it does not survive in every SVG viewer.)
                    patch = plt.Rectangle((bx, y), box_w, box_h, edgecolor=color, linewidth=2.5 if reduced else 1.0,
                                          facecolor=color if reduced else to_rgba(color, 0.25))
                    ax.add_patch(patch)
                    ax.text(bx + box_w / 2, y + box_h / 2, f"{value:g}", ha="center", va="center",
                            fontsize=12, weight="bold", color="white" if reduced else "black")
            if s + 1 < len(stages):
                start, stop = x0 + width + 0.15, (s + 1) * stage_w - 0.15
                middle = -(len(holdings) - 1) * row_h / 2 + box_h / 2
                ax.annotate("", xy=(stop, middle), xytext=(start, middle),
                            arrowprops={"arrowstyle": "-|>", "color": "black", "linewidth": 1.2})
                ax.text((start + stop) / 2, middle + 0.12, transitions[s], ha="center", va="bottom",
                        fontsize=8.5, wrap=True)
        for i, name in enumerate(participants):
            ax.text(-0.15, -i * row_h + box_h / 2, name, ha="right", va="center", fontsize=10)
        legend = [
            plt.Rectangle((0, 0), 1, 1, facecolor=to_rgba("#777777", 0.25), edgecolor="#777777", linewidth=1.0),
            plt.Rectangle((0, 0), 1, 1, facecolor="#777777", edgecolor="#777777", linewidth=2.5),
            plt.Rectangle((0, 0), 1, 1, fill=False, linestyle=(0, (2, 2)), edgecolor="#999999"),
        ]
        ax.legend(legend, ["original contribution (pale)", "summed over participants (solid)", "not held (dashed)"],
                  loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=3, frameon=False, fontsize=8.5)
        ax.set_xlim(-1.3, (len(stages) - 1) * stage_w + 2 * box_w + gap_x + 0.2)
        ax.set_ylim(-(len(participants) - 1) * row_h - 0.3, 1.5)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title)
        fig.tight_layout()
    steps = []
    for s, (heading, holdings, _) in enumerate(stages):
        held = "; ".join(f"{name} holds " + (", ".join(f"{value:g} at position {k + 1}" for k, value in enumerate(row)
                                                          if value is not None) or "nothing")
                         for name, row in zip(participants, holdings))
        steps.append(f"{heading}: {held}" + (f". Then {' '.join(transitions[s].split())}" if s + 1 < len(stages) else ""))
    fig.course_description = f"{title}. " + ". ".join(steps) + "."
    return fig
