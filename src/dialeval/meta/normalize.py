"""Putting a metric on the human scale, as ADEM's |metric| columns do (Lowe et al. 2017):
shift and scale the metric to the human scores' mean and standard deviation, then clip to
the rating scale. Correlations do not change (Pearson exactly; ranks only through clipping);
the point is that a metric's scores can be read, plotted and averaged like ratings."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def to_human_scale(metric: Sequence[float], human: Sequence[float],
                   scale: tuple[float, float] | None = None) -> np.ndarray:
    """`metric` linearly mapped to `human`'s mean and (population) standard deviation,
    clipped to `scale` (low, high) when given. Means and deviations use the items where both
    are present; missing metric values stay NaN. A constant metric maps to the human mean."""
    x = np.asarray(metric, dtype=float)
    y = np.asarray(human, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.any():
        return np.full_like(x, np.nan)
    mx, sx = x[ok].mean(), x[ok].std()
    my, sy = y[ok].mean(), y[ok].std()
    out = np.full_like(x, my) if sx == 0 else (x - mx) / sx * sy + my
    out = np.where(np.isfinite(x), out, np.nan)
    if scale is not None:
        out = np.clip(out, scale[0], scale[1])
    return out
