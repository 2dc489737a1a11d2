"""A figure of composition weights: qualities (rows) by metrics (columns), one number per cell.

Weights of CRS and MME-Avg lie in [0, 1] and sum to 1 per row, so the colour scale is fixed
to [0, 1] (the same colour means the same weight in every figure); ridge coefficients can be
negative and get a symmetric scale instead.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from .plots import _pyplot, _save


def weights_heatmap(weights: np.ndarray, qualities: Sequence[str], metrics: Sequence[str], path: str,
                    *, title: str = "", signed: bool = False) -> str:
    plt = _pyplot()
    weights = np.asarray(weights, dtype=float)
    width = max(4.0, 0.9 * len(metrics) + 2.5)
    height = max(2.5, 0.45 * len(qualities) + 1.5)
    fig, ax = plt.subplots(figsize=(width, height))
    if signed:
        bound = float(np.nanmax(np.abs(weights))) or 1.0
        im = ax.imshow(weights, vmin=-bound, vmax=bound, cmap="RdBu_r", aspect="auto")
    else:
        im = ax.imshow(weights, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(metrics)), metrics, rotation=45, ha="right")
    ax.set_yticks(range(len(qualities)), qualities)
    for i in range(len(qualities)):
        for j in range(len(metrics)):
            v = weights[i, j]
            if np.isfinite(v):
                light = (abs(v) / (np.nanmax(np.abs(weights)) or 1.0) > 0.5) if signed else v < 0.5
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if light and not signed else "black")
    fig.colorbar(im, ax=ax, fraction=0.046)
    if title:
        ax.set_title(title)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _save(fig, path)
    plt.close(fig)
    return path
