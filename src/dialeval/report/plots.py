"""Figures of the meta-evaluation for the command line: metric-vs-human scatter plots (turn
level, and system level showing one point per system) with r, n and a least-squares line, and
a metric-by-metric correlation heatmap, written as PNG with matplotlib's Agg backend (no display needed).
What a PNG here and an SVG of the HTML report (`figures.py`) both show is drawn by one function
(`draw_points_by_system`, `draw_fit_line`, `stat_line`, `draw_matrix`), so the two cannot drift.

Human scores are averages of a few integer ratings, so many points coincide; the scatter
plots jitter them vertically (seeded, +-0.1 of the rating step by default), as the papers'
cross-plots do, so density is visible. The jitter is only drawn, never used in a number.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np


def _pyplot():
    from ..optional import require

    matplotlib = require("matplotlib", "drawing plots", "report")

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _save(fig, path: str) -> None:
    from ..data.writers import atomic_write

    with atomic_write(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=120, bbox_inches="tight")


# -- the drawing both kinds of figure share (PNG here, SVG in figures.py) ----------------------
def draw_fit_line(ax, x: np.ndarray, y: np.ndarray, label: str | None = None) -> None:
    """The least-squares line through the (unjittered) points, when x varies."""
    if len(x) >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        xs = np.array([x.min(), x.max()])
        ax.plot(xs, intercept + slope * xs, color="#222222", linewidth=1.2, linestyle="--",
                **({"label": label} if label else {}))


def stat_line(r: float, n: int, method: str = "Pearson") -> str:
    """`Pearson r = 0.286, n = 300`: a title's second line (a title never hides points)."""
    return f"{method} r = {r:.3f}, n = {n}" if np.isfinite(r) else f"r undefined, n = {n}"


def draw_points_by_system(ax, x: np.ndarray, y: np.ndarray, ok: np.ndarray, systems: Sequence | None,
                          colours: dict, *, size: float, alpha: float) -> None:
    """The points where `ok`, one colour (and legend label) per system in the order of
    `colours`; with no `systems`, every point in `colours`' one colour."""
    names = None if systems is None else np.array([str(s) for s in systems], dtype=object)
    for group, colour in colours.items():
        m = ok if names is None else ok & (names == group)
        if m.any():
            ax.scatter(x[m], y[m], s=size, alpha=alpha, color=colour, label=group, linewidths=0)


def _fit_and_label(ax, x: np.ndarray, y: np.ndarray) -> str:
    """The fit line; returns the title's `Pearson r = ..., n = ...` line."""
    from ..meta.correlation import correlation

    draw_fit_line(ax, x, y)
    r = correlation(x, y, "pearson")[0] if len(x) >= 2 else float("nan")
    return stat_line(r, len(x))


def scatter_plots(values: dict[str, np.ndarray], human: np.ndarray, out_dir: str, *,
                  quality: str = "human", jitter: float = 0.1, seed: int = 0,
                  title: str = "", systems: Sequence | None = None,
                  level: str = "turn") -> list[str]:
    """One PNG per metric: metric (x) against the human score (y, jittered for drawing only),
    coloured by system when `systems` is given, with a fit line, r and n. Returns paths."""
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    y = np.asarray(human, dtype=float)
    names = [str(s) for s in systems] if systems is not None else None
    groups = list(dict.fromkeys(names)) if names is not None else [None]
    cmap = plt.get_cmap("tab10" if len(groups) <= 10 else "tab20")
    colours = {g: cmap(k % cmap.N) for k, g in enumerate(groups)}
    paths = []
    for metric, x in values.items():
        x = np.asarray(x, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        shown = y + rng.uniform(-jitter, jitter, len(y))
        fig, ax = plt.subplots(figsize=(4.5, 4))
        draw_points_by_system(ax, x, shown, ok, names, colours, size=8, alpha=0.5)
        stat = _fit_and_label(ax, x[ok], y[ok])
        if names is not None and 1 < len(groups) <= 12:
            ax.legend(fontsize=6, loc="lower right")
        ax.set_xlabel(metric)
        ax.set_ylabel(f"{quality} (jittered)" if jitter else f"{quality} (mean)")
        ax.set_title(f"{title or f'{level} level: {metric} vs {quality}'}\n{stat}")
        prefix = "scatter" if level == "turn" else level
        path = os.path.join(out_dir, f"{prefix}_{_safe(metric)}_{_safe(quality)}.png")
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    return paths


def system_scatter_plots(system_values: dict[str, dict[str, float]], human: dict[str, float],
                         out_dir: str, *, quality: str = "human") -> list[str]:
    """One PNG per metric at system level: each system's score (x) against its human mean
    (y), labelled, with a fit line, r and n. `system_values`: system -> metric -> value."""
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    names = [s for s in human if s in system_values]
    metrics = list(next(iter(system_values.values()))) if system_values else []
    paths = []
    for metric in metrics:
        x = np.array([system_values[s].get(metric, np.nan) for s in names], dtype=float)
        y = np.array([human[s] for s in names], dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        fig, ax = plt.subplots(figsize=(4.5, 4))
        ax.scatter(x[ok], y[ok], s=18)
        for s, xi, yi, good in zip(names, x, y, ok):
            if good:
                ax.annotate(str(s), (xi, yi), fontsize=6, xytext=(3, 3), textcoords="offset points")
        stat = _fit_and_label(ax, x[ok], y[ok])
        ax.set_xlabel(f"{metric} (per system)")
        ax.set_ylabel(f"{quality} (system mean)")
        ax.set_title(f"system level: {metric} vs {quality}\n{stat}")
        path = os.path.join(out_dir, f"system_{_safe(metric)}_{_safe(quality)}.png")
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    return paths


def draw_matrix(fig, ax, matrix: np.ndarray, xlabels: Sequence[str], ylabels: Sequence[str], *,
                vmin: float = -1.0, vmax: float = 1.0, cmap: str = "RdBu_r", aspect: str | None = None,
                fontsize: int = 8, light=lambda v: abs(v) > 0.6, title: str = "") -> None:
    """A labelled matrix with its value printed in each finite cell (white text where `light`)
    and a colour bar: the one drawing behind every heatmap (PNG here, SVG in the HTML report)."""
    im = ax.imshow(matrix, vmin=vmin, vmax=vmax, cmap=cmap, **({"aspect": aspect} if aspect else {}))
    ax.set_xticks(range(len(xlabels)), xlabels, rotation=45, ha="right")
    ax.set_yticks(range(len(ylabels)), ylabels)
    for i in range(len(ylabels)):
        for j in range(len(xlabels)):
            if np.isfinite(matrix[i, j]):
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=fontsize,
                        color="white" if light(matrix[i, j]) else "black")
    fig.colorbar(im, ax=ax, fraction=0.046)
    if title:
        ax.set_title(title)


def heatmap(matrix: np.ndarray, labels: Sequence[str], path: str, *, title: str = "") -> str:
    """A labelled correlation heatmap (values printed in the cells), saved as PNG."""
    plt = _pyplot()
    matrix = np.asarray(matrix, dtype=float)
    size = max(3.5, 0.7 * len(labels) + 1.5)
    fig, ax = plt.subplots(figsize=(size, size))
    draw_matrix(fig, ax, matrix, labels, labels, title=title)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _save(fig, path)
    plt.close(fig)
    return path


# kept for old imports: the statistic lives in meta/, report/ only draws it
from ..meta.matrix import correlation_matrix  # noqa: E402,F401
