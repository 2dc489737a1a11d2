"""How much do the humans agree? The ceiling a metric's correlation should be read against.

Everything works on one ratings matrix: items x rater slots, NaN where a slot is empty
(`ratings_matrix`). Column k holds the k-th score each item lists; the data sets do not
publish stable annotator ids (except where noted by their loaders), so statistics that need a
rater's identity across items (pairwise kappa, dropping raters) treat a column as a rater,
as the papers' own scripts do. Split-half and leave-one-out need no identities.

- split-half (AM-FM and nlg-eval papers): each item's raters are shuffled and split in two
  halves; the two half-means are correlated over items; repeated with a seeded generator.
- leave-one-rater-out (the holistic paper's inter-rater reliability): each rater against the
  mean of the others; mean and max over raters.
- Cohen's kappa per pair of raters (plain and quadratic-weighted), Fleiss' kappa,
  Krippendorff's alpha (nominal, ordinal, interval, ratio; missing values allowed).
- dropping raters whose mean pairwise kappa is below a threshold (nlg-eval paper: 0.1).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np

from ..errors import DialevalError
from .correlation import correlation, rowwise


def ratings_matrix(samples: Iterable, quality: str) -> np.ndarray:
    """(items, max raters) float matrix of `quality`'s per-annotator scores, NaN-padded.
    Samples without the quality get an all-NaN row, so rows stay aligned with samples."""
    rows = []
    for s in samples:
        ratings = s.ratings if hasattr(s, "ratings") else (s.get("ratings") or {})
        rows.append([float(v) if v is not None else math.nan for v in ratings.get(quality, [])])
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def human_mean(matrix: np.ndarray) -> np.ndarray:
    """Mean of each item's raters (NaN for an item nobody rated)."""
    counts = np.isfinite(matrix).sum(axis=1)
    sums = np.nansum(matrix, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def split_half(matrix: np.ndarray, method: str = "spearman", *, n_rep: int = 100,
               seed: int = 0) -> tuple[float, float]:
    """Mean and standard deviation over `n_rep` random splits of the correlation between the
    two half-means. An item with k raters puts floor(k/2) in one half and the rest in the
    other; items with fewer than 2 raters are left out."""
    m = np.asarray(matrix, dtype=float)
    present = np.isfinite(m)
    m = m[present.sum(axis=1) >= 2]
    present = np.isfinite(m)
    if len(m) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    k = present.sum(axis=1, keepdims=True)
    values = np.where(present, m, 0.0)
    half_a = np.empty((n_rep, len(m)))
    half_b = np.empty((n_rep, len(m)))
    for rep in range(n_rep):
        keys = np.where(present, rng.random(m.shape), np.inf)
        rank = np.argsort(np.argsort(keys, axis=1), axis=1)   # position in the shuffled order
        in_a = rank < (k // 2)
        in_b = present & ~in_a
        half_a[rep] = (values * in_a).sum(axis=1) / in_a.sum(axis=1)
        half_b[rep] = (values * in_b).sum(axis=1) / in_b.sum(axis=1)
    r = rowwise(half_a, half_b, method)
    r = r[np.isfinite(r)]
    return (float(r.mean()), float(r.std())) if r.size else (math.nan, math.nan)


def leave_one_out(matrix: np.ndarray, method: str = "spearman") -> np.ndarray:
    """Per rater column: correlation of that rater with the mean of the other raters, over
    the items where the rater and at least one other rater scored."""
    m = np.asarray(matrix, dtype=float)
    present = np.isfinite(m)
    total = np.nansum(m, axis=1)
    count = present.sum(axis=1)
    out = np.full(m.shape[1], np.nan)
    for j in range(m.shape[1]):
        ok = present[:, j] & (count >= 2)
        if ok.sum() < 2:
            continue
        others = (total[ok] - m[ok, j]) / (count[ok] - 1)
        out[j] = correlation(m[ok, j], others, method)[0]
    return out


def _categories(*arrays: np.ndarray) -> np.ndarray:
    values = np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])
    return np.unique(values[np.isfinite(values)])


def cohen_kappa(a: Sequence[float], b: Sequence[float], *, weights: str | None = None,
                categories: Sequence[float] | None = None) -> float:
    """Cohen's (1960) kappa of two raters over the items both scored.

    `weights`: None (plain), "linear" or "quadratic" (Cohen 1968), with the disagreement
    weight |i-j| or (i-j)^2 over the categories' ranks (the sorted distinct scores, or
    `categories`), as scikit-learn's `cohen_kappa_score` does."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size == 0:
        return math.nan
    cats = np.asarray(categories, dtype=float) if categories is not None else _categories(a, b)
    q = len(cats)
    ia, ib = np.searchsorted(cats, a), np.searchsorted(cats, b)
    if np.any(ia >= q) or np.any(ib >= q) or np.any(cats[ia] != a) or np.any(cats[ib] != b):
        raise DialevalError("a rating is not one of the kappa categories")
    observed = np.zeros((q, q))
    np.add.at(observed, (ia, ib), 1.0)
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    grid = np.arange(q)
    if weights is None:
        w = 1.0 - np.eye(q)
    elif weights == "linear":
        w = np.abs(grid[:, None] - grid[None, :]).astype(float)
    elif weights == "quadratic":
        w = ((grid[:, None] - grid[None, :]) ** 2).astype(float)
    else:
        raise DialevalError(f"unknown kappa weights {weights!r}; choose none, linear or quadratic")
    den = (w * expected).sum()
    if den == 0:
        return math.nan
    return float(1.0 - (w * observed).sum() / den)


def pairwise_kappa(matrix: np.ndarray, *, weights: str | None = None) -> np.ndarray:
    """(raters, raters) Cohen's kappa between rater columns (diagonal NaN). Categories are
    the whole matrix's distinct scores, so every pair is weighted on the same scale."""
    m = np.asarray(matrix, dtype=float)
    cats = _categories(m)
    r = m.shape[1]
    out = np.full((r, r), np.nan)
    for i in range(r):
        for j in range(i + 1, r):
            ok = np.isfinite(m[:, i]) & np.isfinite(m[:, j])
            if ok.sum() >= 2:
                out[i, j] = out[j, i] = cohen_kappa(m[ok, i], m[ok, j], weights=weights,
                                                    categories=cats)
    return out


def fleiss_kappa(matrix: np.ndarray | None = None, *, counts: np.ndarray | None = None) -> float:
    """Fleiss' (1971) kappa, from a ratings matrix or an (items, categories) count table.

    Items may have different numbers of raters (NaN-padded): each item's agreement is
    (sum_j n_ij^2 - n_i) / (n_i (n_i - 1)) and category shares pool all ratings; with a
    constant number of raters this is Fleiss' formula. Items with < 2 ratings are left out."""
    if counts is None:
        if matrix is None:
            raise DialevalError("fleiss_kappa needs a ratings matrix or a count table")
        m = np.asarray(matrix, dtype=float)
        cats = _categories(m)
        if cats.size == 0:   # nobody rated anything
            return math.nan
        counts = np.stack([(m == c).sum(axis=1) for c in cats], axis=1).astype(float)
    counts = np.asarray(counts, dtype=float)
    n_i = counts.sum(axis=1)
    counts = counts[n_i >= 2]
    n_i = n_i[n_i >= 2]
    if len(counts) == 0:
        return math.nan
    p_i = ((counts ** 2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_j = counts.sum(axis=0) / n_i.sum()
    p_bar = p_i.mean()
    p_e = (p_j ** 2).sum()
    return float((p_bar - p_e) / (1 - p_e)) if p_e < 1 else math.nan


def krippendorff_alpha(matrix: np.ndarray, level: str = "ordinal") -> float:
    """Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"),
    via the coincidence matrix; units with fewer than two values are not pairable and
    dropped. `level`: nominal, ordinal, interval or ratio metric differences."""
    m = np.asarray(matrix, dtype=float)
    m = m[np.isfinite(m).sum(axis=1) >= 2]
    values = _categories(m)
    q = len(values)
    if q == 0:
        return math.nan
    if q == 1:
        return 1.0
    counts = np.stack([(m == v).sum(axis=1) for v in values], axis=1).astype(float)  # units x values
    m_u = counts.sum(axis=1)
    # o_ck = sum_u n_uc (n_uk - [c == k]) / (m_u - 1)
    weighted = counts / (m_u - 1)[:, None]
    coincidence = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if level == "nominal":
        delta = 1.0 - np.eye(q)
    elif level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        lo = np.minimum.outer(np.arange(q), np.arange(q))
        hi = np.maximum.outer(np.arange(q), np.arange(q))
        delta = (cum[hi + 1] - cum[lo] - (n_c[lo] + n_c[hi]) / 2.0) ** 2
    elif level == "interval":
        delta = np.subtract.outer(values, values) ** 2
    elif level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            s = np.add.outer(values, values)
            delta = np.where(s == 0, 0.0, (np.subtract.outer(values, values) / s) ** 2)
    else:
        raise DialevalError(f"unknown alpha level {level!r}; choose nominal, ordinal, interval or ratio")
    d_o = (coincidence * delta).sum()
    d_e = (np.outer(n_c, n_c) * delta).sum()
    if d_e == 0:
        return math.nan
    return float(1.0 - (n - 1) * d_o / d_e)


def rater_mean_kappa(matrix: np.ndarray, *, weights: str | None = None) -> np.ndarray:
    """Each rater's mean Cohen's kappa with every other rater."""
    pk = pairwise_kappa(matrix, weights=weights)
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(pk, axis=1)


def drop_raters(matrix: np.ndarray, threshold: float = 0.1, *,
                weights: str | None = None) -> tuple[np.ndarray, list[int]]:
    """The matrix without raters whose mean pairwise kappa is below `threshold` (the
    nlg-eval paper drops annotators under 0.1), and the dropped columns."""
    mk = rater_mean_kappa(matrix, weights=weights)
    dropped = [j for j, v in enumerate(mk) if np.isfinite(v) and v < threshold]
    keep = [j for j in range(matrix.shape[1]) if j not in dropped]
    return np.asarray(matrix)[:, keep], dropped


@dataclass
class Agreement:
    """The human-agreement row of one quality."""

    quality: str
    items: int
    raters: int
    mean: float
    split_half: float
    split_half_std: float
    loo_mean: float
    loo_max: float
    kappa: float
    kappa_quadratic: float
    fleiss: float
    alpha_ordinal: float
    dropped_raters: list[int] = field(default_factory=list)
    method: str = "spearman"
    n_rep: int = 100
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def agreement(matrix: np.ndarray, quality: str = "", *, method: str = "spearman",
              n_rep: int = 100, seed: int = 0, drop_below: float | None = None) -> Agreement:
    """Every agreement statistic of one quality's ratings matrix. With `drop_below`, raters
    whose mean pairwise kappa is under it are removed first (and listed)."""
    import warnings

    m = np.asarray(matrix, dtype=float)
    dropped: list[int] = []
    if drop_below is not None:
        m, dropped = drop_raters(m, drop_below)
    rated = np.isfinite(m).sum(axis=1) >= 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        loo = leave_one_out(m, method)
        pk = pairwise_kappa(m)
        pkq = pairwise_kappa(m, weights="quadratic")
        upper = np.triu_indices(m.shape[1], 1)
        kappa = float(np.nanmean(pk[upper])) if np.isfinite(pk[upper]).any() else math.nan
        kappa_q = float(np.nanmean(pkq[upper])) if np.isfinite(pkq[upper]).any() else math.nan
        sh, sh_sd = split_half(m, method, n_rep=n_rep, seed=seed)
        return Agreement(
            quality=quality, items=int(rated.sum()), raters=int(m.shape[1]),
            mean=float(np.nanmean(m)) if rated.any() else math.nan,
            split_half=sh, split_half_std=sh_sd,
            loo_mean=float(np.nanmean(loo)) if np.isfinite(loo).any() else math.nan,
            loo_max=float(np.nanmax(loo)) if np.isfinite(loo).any() else math.nan,
            kappa=kappa, kappa_quadratic=kappa_q, fleiss=fleiss_kappa(m),
            alpha_ordinal=krippendorff_alpha(m, "ordinal"), dropped_raters=dropped,
            method=method, n_rep=n_rep, seed=seed)
