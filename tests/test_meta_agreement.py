"""Agreement statistics against published worked examples and hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dialeval.data.sample import Sample
from dialeval.meta.agreement import (agreement, cohen_kappa, drop_raters, fleiss_kappa,
                                     human_mean, krippendorff_alpha, leave_one_out,
                                     pairwise_kappa, ratings_matrix, split_half)

NAN = math.nan


def test_cohen_kappa_worked_example():
    # Wikipedia "Cohen's kappa", worked example: 50 proposals, both yes 20, A yes/B no 5,
    # A no/B yes 10, both no 15 -> p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_quadratic_kappa_by_hand():
    # a = 1,2,3 and b = 1,3,3 over categories 1..3. Observed: one disagreement of one step
    # in three items -> weighted disagreement 1/3. Row shares 1/3 each, column shares
    # (1/3, 0, 2/3); each column of squared distances sums to 5 -> expected 5/3.
    # kappa = 1 - (1/3) / (5/3) = 0.8.
    assert cohen_kappa([1, 2, 3], [1, 3, 3], weights="quadratic") == pytest.approx(0.8)


def test_weighted_kappa_matches_sklearn():
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    x = rng.integers(1, 6, 60)
    y = np.clip(x + rng.integers(-1, 2, 60), 1, 5)
    for w in (None, "linear", "quadratic"):
        assert cohen_kappa(x, y, weights=w) == pytest.approx(
            sklearn.cohen_kappa_score(x, y, weights=w), abs=1e-12)


def test_fleiss_kappa_worked_example():
    # Fleiss (1971) style example from Wikipedia "Fleiss' kappa": 10 subjects, 14 raters,
    # 5 categories; P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    counts = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
                       [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
                       [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    assert round(fleiss_kappa(counts=counts), 3) == 0.210
    # The same from a ratings matrix (items x 14 raters).
    matrix = np.array([[c for c, k in enumerate(row, 1) for _ in range(k)] for row in counts])
    assert fleiss_kappa(matrix) == pytest.approx(fleiss_kappa(counts=counts))


def test_krippendorff_alpha_worked_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the example with
    # missing data: 4 observers x 12 units. Published: nominal .743, ordinal .815,
    # interval .849, ratio .797.
    observers = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]])
    m = observers.T
    assert round(krippendorff_alpha(m, "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(m, "ordinal"), 3) == 0.815
    assert round(krippendorff_alpha(m, "interval"), 3) == 0.849
    assert round(krippendorff_alpha(m, "ratio"), 3) == 0.797


def test_perfect_agreement():
    m = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3], [5, 5, 5]], dtype=float)
    assert split_half(m, "pearson", n_rep=5)[0] == pytest.approx(1.0)
    assert leave_one_out(m, "spearman").tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert krippendorff_alpha(m, "ordinal") == pytest.approx(1.0)
    assert fleiss_kappa(m) == pytest.approx(1.0)
    assert np.allclose(pairwise_kappa(m)[np.triu_indices(3, 1)], 1.0)


def test_leave_one_out_by_hand():
    # Rater 0 against the mean of raters 1 and 2: (1.5, 2.5, 3.0, 4.5) vs (1, 2, 4, 3)
    m = np.array([[1, 1, 2], [2, 2, 3], [4, 3, 3], [3, 4, 5]], dtype=float)
    others = [1.5, 2.5, 3.0, 4.5]
    from scipy import stats

    assert leave_one_out(m, "pearson")[0] == pytest.approx(stats.pearsonr(m[:, 0], others).statistic)


def test_split_half_matches_classical_test_theory():
    # Each rating = true score (variance 1) + independent noise (variance 3). A half of 3
    # raters has error variance 1, so two half-means correlate at 1 / (1 + 1) = 0.5.
    rng = np.random.default_rng(0)
    truth = rng.normal(size=4000)
    m = truth[:, None] + rng.normal(scale=math.sqrt(3), size=(4000, 6))
    mean, sd = split_half(m, "pearson", n_rep=20, seed=1)
    assert mean == pytest.approx(0.5, abs=0.03) and sd < 0.03


def test_split_half_seeded_and_missing():
    rng = np.random.default_rng(2)
    truth = rng.normal(size=100)
    m = truth[:, None] + rng.normal(size=(100, 6))
    m[::7, 5] = NAN
    assert split_half(m, seed=3) == split_half(m, seed=3)
    assert 0.5 < split_half(m, seed=3)[0] < 1


def test_drop_raters_removes_the_random_one():
    rng = np.random.default_rng(4)
    truth = rng.integers(1, 6, 200)
    m = np.stack([truth, truth, np.clip(truth + rng.integers(-1, 2, 200), 1, 5),
                  rng.integers(1, 6, 200)], axis=1).astype(float)
    kept, dropped = drop_raters(m, 0.1)
    assert dropped == [3] and kept.shape == (200, 3)


def test_ratings_matrix_and_agreement_row():
    samples = [Sample(id="a", response="x", ratings={"q": [1, 2, 2]}),
               Sample(id="b", response="y", ratings={"q": [3, NAN]}),
               Sample(id="c", response="z", ratings={"other": [1]})]
    m = ratings_matrix(samples, "q")
    assert m.shape == (3, 3) and np.isnan(m[1, 2]) and np.isnan(m[2]).all()
    assert human_mean(m)[:2].tolist() == [5 / 3, 3.0] and np.isnan(human_mean(m)[2])
    row = agreement(np.array([[1, 2, 2], [3, 3, 4], [5, 4, 5], [2, 2, 1]], dtype=float), "q",
                    n_rep=10)
    assert row.items == 4 and row.raters == 3
    assert -1 <= row.kappa <= 1 and -1 <= row.loo_mean <= row.loo_max <= 1
