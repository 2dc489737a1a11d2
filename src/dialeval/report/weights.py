"""A figure of composition weights: qualities (rows) by metrics (columns), one number per cell.

Weights of CRS and MME-Avg lie in [0, 1] and sum to 1 per row, so the colour scale is fixed
to [0, 1] (the same colour means the same weight in every figure); ridge coefficients can be
negative and get a symmetric scale instead.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from .plots import _pyplot, _save, draw_matrix


def weights_heatmap(weights: np.ndarray, qualities: Sequence[str], metrics: Sequence[str], path: str,
                    *, title: str = "", signed: bool = False) -> str:
    plt = _pyplot()
    weights = np.asarray(weights, dtype=float)
    width = max(4.0, 0.9 * len(metrics) + 2.5)
    height = max(2.5, 0.45 * len(qualities) + 1.5)
    fig, ax = plt.subplots(figsize=(width, height))
    if signed:  # a symmetric scale, black text throughout
        bound = float(np.nanmax(np.abs(weights))) or 1.0
        draw_matrix(fig, ax, weights, metrics, qualities, vmin=-bound, vmax=bound, aspect="auto",
                    light=lambda v: False, title=title)
    else:       # viridis is dark below 0.5
        draw_matrix(fig, ax, weights, metrics, qualities, vmin=0.0, vmax=1.0, cmap="viridis",
                    aspect="auto", light=lambda v: v < 0.5, title=title)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    _save(fig, path)
    plt.close(fig)
    return path
