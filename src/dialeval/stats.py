"""Rank correlation in numpy alone, for code below the meta-evaluation layer.

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
