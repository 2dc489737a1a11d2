"""`--refs-mode max|mean` over references one of which the metric cannot read (a pair scored NaN):
the item is scored by the references it can read, as `multi` keeps the best scorable reference;
only an item none of whose references can be read is left unscored."""

from __future__ import annotations

import math

import numpy as np

from dialeval.metrics.base import reduce_pairs


def test_max_and_mean_skip_unreadable_references():
    nan = math.nan
    # item 0: refs 0.2, NaN, 0.6; item 1: NaN only; item 2: no reference; item 3: 0.5
    scores = np.array([0.2, nan, 0.6, nan, 0.5])
    items = np.array([0, 0, 0, 1, 3])
    got_max = reduce_pairs(scores, items, 4, "max")
    got_mean = reduce_pairs(scores, items, 4, "mean")
    assert got_max[0] == 0.6 and got_max[3] == 0.5
    assert math.isclose(got_mean[0], (0.2 + 0.6) / 2) and got_mean[3] == 0.5
    for got in (got_max, got_mean):
        assert math.isnan(got[1]) and math.isnan(got[2])
