"""Rank correlation in numpy alone, for code below the meta-evaluation layer (and for the meta
layer's inner loops that scipy would make slow: `kendall_rows`).

ADEM's early stopping reads a validation Spearman every epoch and the composition fit reads one
per (set, quality, metric); importing scipy.stats costs seconds, and the meta layer (which has
the full correlation machinery, p-values and bootstrap) sits above both. Values equal
scipy.stats.spearmanr's to rounding (average ranks for ties, Pearson of the ranks)."""

from __future__ import annotations

import math

import numpy as np


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their mean rank (as scipy's rankdata), in numpy alone: the
    early-stopping check runs every epoch and importing scipy.stats costs seconds."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], len(x)]
    mean_rank = (starts + ends + 1) / 2.0
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho of two equal-length arrays (NaN when either is constant)."""
    ra, rb = average_ranks(np.asarray(a, float)), average_ranks(np.asarray(b, float))
    ra -= ra.mean()
    rb -= rb.mean()
    den = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb / den) if den > 0 else math.nan


def spearman_finite(x: np.ndarray, y: np.ndarray, min_items: int = 5) -> float:
    """Spearman over the items where both are finite; NaN if fewer than `min_items`."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < min_items:
        return math.nan
    return spearman(x[ok], y[ok])


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row of `x` with the same row of `y`, vectorised over rows: the
    O(n^2) pair signs are cheap for the few points of a system ranking (scipy per row is not),
    which a bootstrap of `compare`'s rank agreement computes thousands of times."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    i, j = np.triu_indices(x.shape[1], 1)
    sx = np.sign(x[:, i] - x[:, j])
    sy = np.sign(y[:, i] - y[:, j])
    concord = (sx * sy).sum(axis=1)
    untied_x = (sx != 0).sum(axis=1)
    untied_y = (sy != 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return concord / np.sqrt(untied_x * untied_y.astype(float))
