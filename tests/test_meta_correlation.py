"""Correlations, levels and the bootstrap: scipy or hand-worked values."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dialeval.meta.correlation import (FewPointsWarning, bootstrap, bootstrap_indices, correlate,
                                       correlation, group_means, level_points, rowwise)
from dialeval.meta.normalize import to_human_scale


def test_hand_worked_correlations():
    # x = 1..5, y = 2,1,4,3,5: deviations (-2,-1,0,1,2) and (-1,-2,1,0,2), cross sum 8,
    # squares 10 and 10 -> Pearson 0.8; the ranks equal the values -> Spearman 0.8;
    # pairs (1,2) and (3,4) are discordant, 8 concordant -> tau = (8 - 2) / 10 = 0.6.
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    assert correlation(x, y, "pearson")[0] == pytest.approx(0.8)
    assert correlation(x, y, "spearman")[0] == pytest.approx(0.8)
    assert correlation(x, y, "kendall")[0] == pytest.approx(0.6)


@pytest.mark.parametrize("method,fn", [("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                                       ("kendall", lambda a, b: stats.kendalltau(a, b, variant="b"))])
def test_matches_scipy_with_ties(method, fn):
    rng = np.random.default_rng(3)
    x = rng.normal(size=80)
    y = np.round(x + rng.normal(size=80))  # many ties, as in human ratings
    r, p = correlation(x, y, method)
    ref = fn(x, y)
    assert r == pytest.approx(ref.statistic, abs=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_constant_input_is_nan():
    assert all(math.isnan(v) for v in correlation([1, 1, 1], [1, 2, 3], "pearson"))


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_rowwise_equals_scipy_per_row(method):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 5, size=(20, 30)).astype(float)
    y = x + rng.integers(-2, 3, size=(20, 30))
    got = rowwise(x, y, method)
    for i in range(20):
        assert got[i] == pytest.approx(correlation(x[i], y[i], method)[0], abs=1e-12)


def test_group_means_and_levels():
    keys = ["a", "b", "a", "c", "b"]
    names, means = group_means(np.array([1.0, 2.0, 3.0, 4.0, 6.0]), keys)
    assert names == ["a", "b", "c"] and means.tolist() == [2.0, 4.0, 4.0]
    # A missing metric value drops that sample before averaging.
    x, y, names = level_points([1, np.nan, 3, 4, 6], [1, 1, 1, 2, 2], "dialogue", dialogues=keys)
    # (order of first appearance among the kept samples: b's first sample was dropped)
    assert names == ["a", "c", "b"] and x.tolist() == [2.0, 4.0, 6.0] and y.tolist() == [1.0, 2.0, 2.0]


def test_system_level_is_correlation_of_system_means():
    rng = np.random.default_rng(0)
    systems = np.repeat([f"s{k}" for k in range(8)], 25)
    x = rng.normal(size=200) + np.repeat(np.arange(8), 25)
    y = rng.normal(size=200) + np.repeat(np.arange(8) % 3, 25)
    mx = [x[systems == f"s{k}"].mean() for k in range(8)]
    my = [y[systems == f"s{k}"].mean() for k in range(8)]
    c = correlate(x, y, ["pearson"], "system", systems=list(systems), n_boot=200)[0]
    assert c.n == 8 and c.r == pytest.approx(stats.pearsonr(mx, my).statistic)


def test_dialogue_level_needs_ids():
    from dialeval.errors import DialevalError

    with pytest.raises(DialevalError, match="dialogue_id"):
        correlate([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], level="dialogue", n_boot=0)


def test_bootstrap_ci_seeded_and_sensible():
    rng = np.random.default_rng(1)
    x = rng.normal(size=150)
    y = x + rng.normal(size=150)
    a = correlate(x, y, n_boot=500, seed=7)
    b = correlate(x, y, n_boot=500, seed=7)
    c = correlate(x, y, n_boot=500, seed=8)
    assert [(r.ci_low, r.ci_high) for r in a] == [(r.ci_low, r.ci_high) for r in b]
    assert [(r.ci_low, r.ci_high) for r in a] != [(r.ci_low, r.ci_high) for r in c]
    for r in a:
        assert r.ci_low < r.r < r.ci_high
    # The percentile interval of Pearson's r is close to the Fisher-z interval (n = 150).
    pearson = a[0]
    z, se = np.arctanh(pearson.r), 1 / math.sqrt(150 - 3)
    lo, hi = np.tanh(z - 1.96 * se), np.tanh(z + 1.96 * se)
    assert abs(pearson.ci_low - lo) < 0.05 and abs(pearson.ci_high - hi) < 0.05


def test_system_bootstrap_resamples_within_systems():
    rng = np.random.default_rng(2)
    strata = ["a"] * 3 + ["b"] * 5 + ["a"] * 2
    idx = bootstrap_indices(10, 50, rng, strata=strata)
    members = {"a": {0, 1, 2, 8, 9}, "b": {3, 4, 5, 6, 7}}
    for col, s in enumerate(strata):
        assert set(idx[:, col]) <= members[s]


def test_paired_bootstrap_uses_same_resamples():
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    y = x + rng.normal(size=60)
    d = bootstrap(x, y, ["spearman"], n_boot=100, seed=3, extra=[x.copy()])
    assert np.array_equal(d["spearman"], d[("spearman", 1)])


def test_few_points_warns():
    with pytest.warns(FewPointsWarning):
        correlate([1, 2, 3, 4], [1, 3, 2, 4], n_boot=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewPointsWarning)
        correlate([1, 2, 3, 4, 5], [1, 3, 2, 4, 5], n_boot=10)


def test_to_human_scale():
    rng = np.random.default_rng(6)
    human = rng.integers(1, 6, 100).astype(float)
    metric = human * 0.01 + rng.normal(0, 0.01, 100)
    scaled = to_human_scale(metric, human)
    assert scaled.mean() == pytest.approx(human.mean()) and scaled.std() == pytest.approx(human.std())
    assert correlation(scaled, human)[0] == pytest.approx(correlation(metric, human)[0])
    clipped = to_human_scale(metric, human, (1, 5))
    assert clipped.min() >= 1 and clipped.max() <= 5
    assert to_human_scale([2, 2, 2], [1, 2, 3]).tolist() == [2, 2, 2]
