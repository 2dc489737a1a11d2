"""Figures of the meta-evaluation: metric-vs-human scatter plots and a metric-by-metric
correlation heatmap, written as PNG with matplotlib's Agg backend (no display needed).

Human scores are averages of a few integer ratings, so many points coincide; the scatter
plots jitter them vertically (seeded, +-0.1 of the rating step by default), as the papers'
cross-plots do, so density is visible. The jitter is only drawn, never used in a number.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _save(fig, path: str) -> None:
    from ..data.writers import atomic_write

    with atomic_write(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=120, bbox_inches="tight")


def scatter_plots(values: dict[str, np.ndarray], human: np.ndarray, out_dir: str, *,
                  quality: str = "human", jitter: float = 0.1, seed: int = 0,
                  title: str = "") -> list[str]:
    """One PNG per metric: metric (x) against the human score (y, jittered). Returns paths."""
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(seed)
    y = np.asarray(human, dtype=float)
    paths = []
    for metric, x in values.items():
        x = np.asarray(x, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        fig, ax = plt.subplots(figsize=(4.5, 4))
        ax.scatter(x[ok], y[ok] + rng.uniform(-jitter, jitter, ok.sum()), s=8, alpha=0.5)
        ax.set_xlabel(metric)
        ax.set_ylabel(f"{quality} (jittered)")
        ax.set_title(title or f"{metric} vs {quality}")
        path = os.path.join(out_dir, f"scatter_{_safe(metric)}_{_safe(quality)}.png")
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    return paths


def heatmap(matrix: np.ndarray, labels: Sequence[str], path: str, *, title: str = "") -> str:
    """A labelled correlation heatmap (values printed in the cells), saved as PNG."""
    plt = _pyplot()
    matrix = np.asarray(matrix, dtype=float)
    size = max(3.5, 0.7 * len(labels) + 1.5)
    fig, ax = plt.subplots(figsize=(size, size))
    im = ax.imshow(matrix, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            if np.isfinite(matrix[i, j]):
                ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(matrix[i, j]) > 0.6 else "black")
    fig.colorbar(im, ax=ax, fraction=0.046)
    if title:
        ax.set_title(title)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _save(fig, path)
    plt.close(fig)
    return path


# kept for old imports: the statistic lives in meta/, report/ only draws it
from ..meta.matrix import correlation_matrix  # noqa: E402,F401
