"""The resampling behind `compare`: bootstrap CIs, the paired bootstrap and approximate
randomization, and when a p-value earns a significance mark.

The tests follow sacreBLEU (`sacrebleu/significance.py`) exactly, so that a p-value printed
here can be checked against `sacrebleu --paired-bs` / `--paired-ar`:

- one `numpy.random.default_rng(seed)` draws the resample index matrix
  `rng.choice(N, size=(n_resamples, N))` once; every system is resampled with the same rows
  (items are paired across systems by their position in the aligned item order);
- bootstrap CI: the resampled scores sorted, the values at ranks `n//40` and `n - n//40 - 1`
  (sacreBLEU's `estimate_ci`; its "mean +- ci" is the bootstrap mean and half that width);
- paired bootstrap (Koehn 2004 as sacreBLEU implements it): `d = |score_sys - score_base|` per
  resample, centred (`d - mean(d)`), p = (#{centred d > observed |difference|} + 1) / (n + 1);
- approximate randomization: `rng.integers(2, size=(n_trials, N))` swaps each item's output
  between the two systems; p = (#{|a - b| > observed |difference|} + 1) / (n + 1).
  sacreBLEU's default is 1,000 resamples for the bootstrap and 10,000 trials for AR, seed 12345.

One deliberate difference: two systems with exactly the same corpus score get p = 1. sacreBLEU
counts `> observed` strictly, so a zero observed difference gives its smallest p, 1/(n+1), and
a "significant" mark on systems that do not differ at all.

No significance mark where the paired set is too small for it. Both tests are symmetric in the
two systems, and under the null hypothesis (the two outputs of an item are exchangeable) each of
the 2^m ways of swapping the m items whose outputs differ is equally likely; the full swap gives
the same |difference| as the data, so a valid test rejects on at least 2 of the 2^m and its p
cannot go below 2^(1-m). With B resamples the p-value itself cannot go below 1/(B+1). The
smallest attainable p is the larger of the two (`min_attainable_p`); a mark is given only where
both the p-value and that bound are under its threshold. A bootstrap on 2 items can print
p = 1/(B+1), but no test on 2 items can honestly reach 0.05.
"""

from __future__ import annotations

import math

import numpy as np

from .measures import Measure, RowsMeasure

TESTS = ("bs", "ar")

DEFAULT_RESAMPLES = {"bs": 1000, "ar": 10000}

DEFAULT_SEED = 12345  # sacreBLEU's SACREBLEU_SEED default

CI_BOOTSTRAP = 1000   # resamples for the CIs when the test is AR (sacreBLEU's --paired-ar-confidence-n)


def resample_counts(n: int, n_resamples: int, seed: int | None) -> np.ndarray:
    """(R, n) counts of each item in each bootstrap resample, drawn as sacreBLEU draws them."""
    rng = np.random.default_rng(seed)
    idxs = rng.choice(n, size=(n_resamples, n), replace=True)
    flat = (np.arange(n_resamples)[:, None] * n + idxs).ravel()
    return np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n).astype(np.float64)

def ar_selectors(n: int, n_trials: int, seed: int | None) -> np.ndarray:
    """(T, n) booleans: True keeps the item's output with its own system (sacreBLEU's pos_sel)."""
    rng = np.random.default_rng(seed)
    return rng.integers(2, size=(n_trials, n), dtype=bool)

def resampled_scores(measure: Measure, idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Scores of the items `idx` of `measure` under each resample of `counts` (R, len(idx))."""
    return measure.resampled(idx, counts)

def estimate_ci(scores: np.ndarray) -> tuple[float, float, float]:
    """(bootstrap mean, low, high): the order statistics sacreBLEU's estimate_ci uses."""
    s = np.sort(scores[np.isfinite(scores)])
    if len(s) == 0:
        return math.nan, math.nan, math.nan
    lower = len(s) // 40
    return float(s.mean()), float(s[lower]), float(s[len(s) - lower - 1])

def p_value(samples: np.ndarray, observed: float) -> float:
    """(#{samples > observed} + 1) / (n + 1), as sacreBLEU (after multeval) counts."""
    return (int(np.sum(samples > observed)) + 1) / (len(samples) + 1)

def paired_bootstrap_p(base: np.ndarray, other: np.ndarray, observed: float) -> float:
    if observed == 0:
        return 1.0          # no difference to explain (see the module docstring)
    diffs = np.abs(other - base)
    if not np.isfinite(diffs).any():
        return math.nan     # no resampled value at all (a `RowsMeasure`): no test
    return p_value(diffs - diffs.mean(), abs(observed))

def approximate_randomization_p(measure_a: Measure, idx_a: np.ndarray, measure_b: Measure,
                                idx_b: np.ndarray, selectors: np.ndarray) -> float:
    if isinstance(measure_a, RowsMeasure) and measure_b is measure_a:
        shuf_a, shuf_b = [], []
        for start in range(0, len(selectors), 1000):
            sa, sb = measure_a.swapped(idx_a, idx_b, selectors[start:start + 1000])
            shuf_a.append(sa)
            shuf_b.append(sb)
        # the observed difference from the same vectorised sums as the swaps
        keep_a, keep_b = measure_a.swapped(idx_a, idx_b, np.ones((1, len(idx_a)), dtype=bool))
        observed = abs(float(keep_a[0]) - float(keep_b[0]))
        if observed == 0:
            return 1.0
        return p_value(np.abs(np.concatenate(shuf_a) - np.concatenate(shuf_b)), observed)
    a, b = measure_a.stats[idx_a], measure_b.stats[idx_b]
    sum_a, sum_b, diff = a.sum(axis=0), b.sum(axis=0), a - b
    shuf_a, shuf_b = [], []
    for start in range(0, len(selectors), 1000):   # chunks keep memory at ~16 MB per 2,000 items
        moved = selectors[start:start + 1000].astype(np.float64) @ diff
        shuf_a.append(measure_a.reduce(moved + sum_b))   # pos @ a + neg @ b
        shuf_b.append(measure_b.reduce(sum_a - moved))   # neg @ a + pos @ b
    shuf_a, shuf_b = np.concatenate(shuf_a), np.concatenate(shuf_b)
    observed = abs(measure_a.score(idx_a) - measure_b.score(idx_b))
    if observed == 0:
        return 1.0
    return p_value(np.abs(shuf_a - shuf_b), observed)

def min_attainable_p(n_differing: int, n_resamples: int) -> float:
    """The smallest p a paired test can give on items of which `n_differing` have different
    outputs in the two systems, with `n_resamples` resamples (see the module docstring)."""
    exact = 1.0 if n_differing < 1 else min(1.0, 2.0 ** (1 - n_differing))
    return max(exact, 1.0 / (n_resamples + 1))

def significance_mark(p: float | None, p_min: float | None = None) -> str:
    """`**` p < 0.01, `*` p < 0.05 (no correction for multiple comparisons), each only where the
    smallest attainable p (`p_min`, see `min_attainable_p`) is under the threshold too."""
    if p is None or not isinstance(p, float) or not math.isfinite(p):
        return ""
    if p_min is not None and isinstance(p_min, (int, float)) and math.isfinite(p_min):
        p = max(p, float(p_min))
    return "**" if p < 0.01 else "*" if p < 0.05 else ""

def fmt_bound(p: float) -> str:
    return f"{p:.4g}"


__all__ = ["TESTS", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "CI_BOOTSTRAP", "resample_counts",
           "ar_selectors", "resampled_scores", "estimate_ci", "p_value", "paired_bootstrap_p",
           "approximate_randomization_p", "min_attainable_p", "significance_mark", "fmt_bound"]
