"""Williams' test against a published worked example; the paired bootstrap by its properties."""

from __future__ import annotations

import numpy as np
import pytest

from dialeval.meta.significance import compare, williams_test


def test_williams_howell_worked_example():
    # Howell, "Statistical Methods for Psychology" (6th ed., p. 262), as reproduced in
    # Bruce Weaver's SPSS syntax (Williams1959.sps, MRC CBU statistics wiki "FAQ/Will"):
    # r12 = .80, r13 = .72, r23 = .89, n = 26 -> t = 1.361, df = 23, two-sided p = .187.
    t, p = williams_test(0.80, 0.72, 0.89, 26, two_sided=True)
    assert round(t, 3) == 1.361
    assert round(p, 3) == 0.187
    t1, p1 = williams_test(0.80, 0.72, 0.89, 26)
    assert t1 == t and p1 == pytest.approx(p / 2)
    t2, p2 = williams_test(0.72, 0.80, 0.89, 26)
    assert t2 == -t and p2 == pytest.approx(1 - p / 2)


def test_equal_metrics_are_not_different():
    rng = np.random.default_rng(0)
    h = rng.normal(size=100)
    a = h + rng.normal(size=100)
    c = compare(a, a.copy(), h, n_boot=200)
    assert c.williams_t == 0 and c.bootstrap_p == 1.0  # A never beats itself


def test_better_metric_is_detected():
    rng = np.random.default_rng(1)
    h = rng.normal(size=300)
    a = h + 0.5 * rng.normal(size=300)
    b = h + 2.0 * rng.normal(size=300)
    c = compare(a, b, h, n_boot=500, seed=2, names=("good", "bad"))
    assert c.r_a > c.r_b
    assert c.williams_p < 0.001 and c.bootstrap_p < 0.01
    assert 0 < c.diff_ci_low < c.r_a - c.r_b < c.diff_ci_high
    flipped = compare(b, a, h, n_boot=500, seed=2)
    assert flipped.williams_p > 0.999 and flipped.bootstrap_p > 0.99


def test_compare_at_system_level():
    rng = np.random.default_rng(3)
    systems = list(np.repeat([f"s{k}" for k in range(10)], 20))
    quality = np.repeat(rng.normal(size=10), 20)
    h = quality + rng.normal(size=200)
    a = quality + 0.2 * rng.normal(size=200)
    b = rng.normal(size=200)
    c = compare(a, b, h, level="system", systems=systems, n_boot=300)
    assert c.n == 10 and c.r_a > c.r_b and c.bootstrap_p < 0.05
