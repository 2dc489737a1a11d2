"""Figures for the HTML report, as SVG text to inline (matplotlib's Agg/SVG backends).

Deterministic bytes: the SVG's random element ids come from a fixed hash salt, the date
metadata is dropped, text stays text (`svg.fonttype: none`) and every random jitter is seeded.
Human scores are means of a few integer ratings, so turn-level points pile up; they are
jittered vertically by up to a tenth of the rating scale step for the drawing only. The points,
fit lines and matrices are drawn by `plots.py`'s functions, as the command line's PNG figures are;
what is here is the SVG output and the report's own choices (sizes, error bars, labels).
"""

from __future__ import annotations

import io
import math
from typing import Sequence

import numpy as np

from .plots import _pyplot, draw_fit_line, draw_matrix, draw_points_by_system, stat_line

SVG_RC = {"svg.hashsalt": "dialeval", "svg.fonttype": "none", "font.size": 8,
          "axes.titlesize": 9, "figure.dpi": 72}


def system_colours(systems: Sequence[str]) -> dict[str, str]:
    """A stable colour per system (tab10, then tab20 for more than ten systems)."""
    from ..optional import require

    matplotlib = require("matplotlib", "drawing the report's figures", "report")
    from matplotlib.colors import to_hex
    cmap = matplotlib.colormaps["tab10" if len(systems) <= 10 else "tab20"]
    return {s: to_hex(cmap(i % cmap.N)) for i, s in enumerate(systems)}


def _svg(fig) -> str:
    from ..optional import require

    matplotlib = require("matplotlib", "drawing the report's figures", "report")

    out = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        fig.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    _pyplot().close(fig)
    text = out.getvalue()
    return text[text.index("<svg"):]          # drop the XML prolog and DOCTYPE for inlining


def turn_scatter(x: Sequence[float], y: Sequence[float], systems: Sequence[str], *, metric: str,
                 quality: str, colours: dict[str, str], r: float, seed: int = 0,
                 jitter: float = 0.1) -> str:
    """Metric (x) vs human mean (y, jittered for drawing), one colour per system, fit line."""
    with _rc():
        plt = _pyplot()
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        ok = np.isfinite(x) & np.isfinite(y)
        rng = np.random.default_rng(seed)
        shown = y + rng.uniform(-jitter, jitter, len(y))
        fig, ax = plt.subplots(figsize=(4.2, 3.4))
        draw_points_by_system(ax, x, shown, ok, systems, colours, size=9, alpha=0.6)
        draw_fit_line(ax, x[ok], y[ok], label="least-squares fit")
        ax.set_xlabel(metric)
        ax.set_ylabel(f"{quality} (mean rating, jittered)")
        ax.set_title(f"turn level: {metric} vs {quality}\n{stat_line(r, int(ok.sum()))}")
        if len(colours) <= 12:
            ax.legend(fontsize=6, loc="lower right", frameon=True, markerscale=1.2)
        return _svg(fig)


def system_scatter(x: Sequence[float], y: Sequence[float], systems: Sequence[str], *,
                   metric: str, quality: str, colours: dict[str, str], r: float,
                   x_ci: Sequence[tuple[float, float]] | None = None,
                   y_ci: Sequence[tuple[float, float]] | None = None) -> str:
    """System means: corpus metric score (x, with its 95% CI) vs the human system score."""
    with _rc():
        plt = _pyplot()
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        ok = np.isfinite(x) & np.isfinite(y)
        fig, ax = plt.subplots(figsize=(4.2, 3.4))
        for i, s in enumerate(systems):
            if not ok[i]:
                continue
            xerr = yerr = None
            if x_ci is not None and all(math.isfinite(v) for v in x_ci[i]):
                xerr = [[x[i] - x_ci[i][0]], [x_ci[i][1] - x[i]]]
            if y_ci is not None and all(math.isfinite(v) for v in y_ci[i]):
                yerr = [[y[i] - y_ci[i][0]], [y_ci[i][1] - y[i]]]
            ax.errorbar(x[i], y[i], xerr=xerr, yerr=yerr, fmt="o", color=colours[s], markersize=4,
                        elinewidth=0.8, capsize=1.5)
            ax.annotate(s, (x[i], y[i]), fontsize=6, xytext=(3, 3), textcoords="offset points")
        draw_fit_line(ax, x[ok], y[ok], label="least-squares fit")
        ax.set_xlabel(f"{metric} (corpus score per system, 95% CI)")
        ax.set_ylabel(f"{quality} (system mean)")
        ax.set_title(f"system level: {metric} vs {quality}\n{stat_line(r, int(ok.sum()))}")
        return _svg(fig)


def heatmap(matrix: np.ndarray, labels: Sequence[str], *, title: str = "") -> str:
    """Metric-by-metric correlation heatmap with the values in the cells."""
    with _rc():
        plt = _pyplot()
        matrix = np.asarray(matrix, dtype=float)
        size = max(3.2, 0.55 * len(labels) + 1.6)
        fig, ax = plt.subplots(figsize=(size, size * 0.85))
        draw_matrix(fig, ax, matrix, labels, labels, fontsize=7, title=title)
        return _svg(fig)


def _rc():
    from ..optional import require

    matplotlib = require("matplotlib", "drawing the report's figures", "report")

    return matplotlib.rc_context(SVG_RC)
