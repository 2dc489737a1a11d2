"""USL-H's normalisation of a sub-metric score to [0, 1]: clip the raw score to the 25th-75th
percentiles of the scores the model gives its own (held-out) training examples, then min-max
scale that range to [0, 1]. Scores below the training set's lower quartile become 0, above
its upper quartile 1; CRS then weighs sub-metrics that all live on one scale.

That 0 is also the floor a blank response scores, so the USL-H value then goes through the
shared squashing map (`metrics.softfloor.lift`): every value from 0.05 up is USL-H's exactly,
and the bottom [0, 0.05) is squashed into [0.025, 0.05), in the same order, strictly above the
floor that only a blank response keeps.
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
    """Clip to [low, high], scale to [0, 1] and lift the bottom above 0 (0.5 everywhere when
    the range is empty)."""
    x = np.asarray(scores, dtype=float)
    if not high > low:
        return np.where(np.isfinite(x), 0.5, np.nan)
    return lift((np.clip(x, low, high) - low) / (high - low))
