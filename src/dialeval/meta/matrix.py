"""Metric-by-metric correlation matrix: how much the metrics say the same thing."""

from __future__ import annotations

import numpy as np


def correlation_matrix(values: dict[str, np.ndarray], method: str = "spearman") -> np.ndarray:
    """Metric-by-metric correlation over the items where both are present (1 on the diagonal)."""
    from .correlation import correlation

    names = list(values)
    out = np.eye(len(names))
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            x, y = np.asarray(values[a], float), np.asarray(values[names[j]], float)
            ok = np.isfinite(x) & np.isfinite(y)
            out[i, j] = out[j, i] = correlation(x[ok], y[ok], method)[0]
    return out
