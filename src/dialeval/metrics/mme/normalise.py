"""USL-H's normalisation of a sub-metric score to [0, 1]: clip the raw score to the 25th-75th
percentiles of the scores the model gives its own (held-out) training examples, then min-max
scale that range to [0, 1]. Scores above the training set's upper quartile become 1; CRS then
weighs sub-metrics that all live on one scale.

The bottom is not clipped: 0 is the floor a blank response scores, and USL-H's clip would put
every real reply under the lower quartile there too. Those replies go through the shared
squashing map instead (`metrics.softfloor.lift`): strictly above 0, in the order of their raw
scores; every score at 0.05 or above is USL-H's exactly.
"""

from __future__ import annotations

import numpy as np

from ..softfloor import lift

LOW_PCT, HIGH_PCT = 25.0, 75.0


def fit_range(train_scores: np.ndarray) -> tuple[float, float]:
    """(low, high): the 25th and 75th percentiles of finite training scores."""
    values = np.asarray(train_scores, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return 0.0, 1.0
    low, high = np.percentile(values, [LOW_PCT, HIGH_PCT])
    return float(low), float(high)


def apply_range(scores: np.ndarray, low: float, high: float) -> np.ndarray:
    """Scale [low, high] onto [0, 1], clip at 1, and lift what falls under the knee strictly
    above 0 (0.5 everywhere when the range is empty)."""
    x = np.asarray(scores, dtype=float)
    if not high > low:
        return np.where(np.isfinite(x), 0.5, np.nan)
    return lift(np.minimum((x - low) / (high - low), 1.0))
