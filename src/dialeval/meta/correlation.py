"""Correlation of a metric with human scores, at turn, dialogue or system level, with a
seeded bootstrap confidence interval.

The point estimates and p-values are scipy's (Pearson, Spearman, Kendall tau-b), so a number
here is the number every paper's script would print. The bootstrap draws one index matrix
(resamples x points) from a seeded `numpy.random.Generator` and evaluates all resamples at
once, so 1,000 resamples cost about as much as a few dozen plain correlations.

Levels. `turn`: one point per sample. `dialogue`: the mean of the samples that share a
dialogue id *and a system* (metric and human alike): systems that answer the same dialogue are
one point each, never averaged together. `system`: the mean per system, correlated across
systems (the CLI and reports correlate each system's corpus score instead: `system_level`).
The bootstrap resamples the points at turn and dialogue level; at system level it resamples
the turns *within each system* and recomputes the system means, because there are too few
systems to resample them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from ..errors import DialevalError

METHODS = ("pearson", "spearman", "kendall")
LEVELS = ("turn", "dialogue", "system")
MIN_POINTS = 5  # fewer points than this and a correlation says little; we warn
_CHUNK_ELEMENTS = 2_000_000  # resampled values per bootstrap chunk
_EXACT_FLOOR_MAX_N = 20     # 2/n! floor on rank p-values; 2/21! < 1e-19, below any printed p


class FewPointsWarning(UserWarning):
    """A correlation computed over fewer than MIN_POINTS points."""


@dataclass
class Correlation:
    method: str
    r: float
    p: float
    n: int
    ci_low: float = math.nan
    ci_high: float = math.nan
    level: str = "turn"
    n_boot: int = 0
    seed: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise DialevalError(f"unknown correlation {method!r}; choose from {', '.join(METHODS)}")


def correlation(x: Sequence[float], y: Sequence[float], method: str = "pearson") -> tuple[float, float]:
    """(r, two-sided p) as scipy computes them; Kendall is tau-b. NaN when undefined.

    Spearman and Kendall p-values are floored at 2/n!, the smallest p their exact permutation
    null allows on n points (it matters only for a handful of points: systems)."""
    from scipy import stats

    _check_method(method)
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            res = stats.pearsonr(x, y)
        elif method == "spearman":
            res = stats.spearmanr(x, y)
        else:
            res = stats.kendalltau(x, y, variant="b")
    p = float(res.pvalue)
    if method != "pearson" and len(x) <= _EXACT_FLOOR_MAX_N and math.isfinite(p):
        # a rank correlation's exact null is the n! permutations: no p below 2/n! (scipy's
        # Spearman t approximation gives 0 for a perfect ranking of 3 systems; exact is 1/3)
        p = max(p, 2.0 / math.factorial(len(x)))
    return float(res.statistic), p


def rowwise(x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    """Correlation of each row of `x` with the same row of `y` (no p-values): the bootstrap's
    inner loop. Pearson and Spearman are vectorised; Kendall tau-b calls scipy per row."""
    from scipy import stats

    _check_method(method)
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if method == "kendall":
        out = np.empty(x.shape[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(x.shape[0]):
                out[i] = stats.kendalltau(x[i], y[i], variant="b").statistic
        return out
    if method == "spearman":
        x = stats.rankdata(x, axis=1)
        y = stats.rankdata(y, axis=1)
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / den
    return np.clip(r, -1.0, 1.0)


def group_means(values: np.ndarray, keys: Sequence) -> tuple[list, np.ndarray]:
    """Means of `values` per key, keys in order of first appearance. `values` may be 2-D
    (rows are variables), averaged along the last axis."""
    order: dict = {}
    codes = np.empty(len(keys), dtype=np.int64)
    for i, k in enumerate(keys):
        codes[i] = order.setdefault(k, len(order))
    values = np.asarray(values, dtype=float)
    if not order:   # nothing to group: an empty result of the right shape
        return [], np.empty(values.shape[:-1] + (0,))
    counts = np.bincount(codes, minlength=len(order))
    flat = values.reshape(-1, values.shape[-1])
    sums = np.stack([np.bincount(codes, weights=row, minlength=len(order)) for row in flat])
    return list(order), (sums / counts).reshape(values.shape[:-1] + (len(order),))


def _valid(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & np.isfinite(y)


def level_points(metric: Sequence[float], human: Sequence[float], level: str = "turn", *,
                 dialogues: Sequence | None = None, systems: Sequence | None = None):
    """The (metric, human) points a level correlates, and the keys they came from.

    Samples with a missing metric or human value are left out before averaging."""
    if level not in LEVELS:
        raise DialevalError(f"unknown level {level!r}; choose from {', '.join(LEVELS)}")
    x = np.asarray(metric, dtype=float)
    y = np.asarray(human, dtype=float)
    ok = _valid(x, y)
    if level == "turn":
        return x[ok], y[ok], None
    keys = dialogues if level == "dialogue" else systems
    if keys is None or any(k is None for k, good in zip(keys, ok) if good):
        what = "meta['dialogue_id']" if level == "dialogue" else "'system'"
        raise DialevalError(f"{level}-level correlation needs {what} on every sample")
    if level == "dialogue" and systems is not None:
        # a point per (system, dialogue): two systems answering one dialogue are two points
        keys = list(zip(systems, keys))
    kept = [k for k, good in zip(keys, ok) if good]
    names, means = group_means(np.stack([x[ok], y[ok]]), kept)
    return means[0], means[1], names


def bootstrap_indices(n: int, n_boot: int, rng: np.random.Generator,
                      strata: Sequence | None = None) -> np.ndarray:
    """(n_boot, n) resample indices; with `strata`, each position is redrawn from its own
    stratum, so every stratum keeps its size."""
    if strata is None:
        return rng.integers(0, n, size=(n_boot, n))
    idx = np.empty((n_boot, n), dtype=np.int64)
    groups: dict = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    for members in groups.values():
        members = np.asarray(members)
        idx[:, members] = members[rng.integers(0, len(members), size=(n_boot, len(members)))]
    return idx


def bootstrap(metric: Sequence[float], human: Sequence[float], methods: Sequence[str] = METHODS,
              level: str = "turn", *, dialogues: Sequence | None = None,
              systems: Sequence | None = None, n_boot: int = 1000, seed: int = 0,
              extra: Sequence[Sequence[float]] = ()) -> dict[str, np.ndarray]:
    """Bootstrap distributions {method: (n_boot,) r} of the level's correlation.

    `extra` metrics are resampled with the same indices (paired bootstrap): their
    distributions come back under keys `(method, k)`.
    """
    rng = np.random.default_rng(seed)
    xs = [np.asarray(metric, dtype=float)] + [np.asarray(e, dtype=float) for e in extra]
    y = np.asarray(human, dtype=float)
    ok = np.isfinite(y)
    for x in xs:
        ok &= np.isfinite(x)
    if level == "system":
        if systems is None:
            raise DialevalError("system-level correlation needs 'system' on every sample")
        keys = [s for s, good in zip(systems, ok) if good]
        cols = [x[ok] for x in xs] + [y[ok]]
        strata = keys
    else:
        cols = []
        for x in xs:
            a, hy, _ = level_points(np.where(ok, x, np.nan), y, level, dialogues=dialogues,
                                    systems=systems)
            cols.append(a)
        cols.append(hy)
        strata = None
    n = len(cols[-1])
    # Resamples are drawn and evaluated in chunks (a fixed size for a given n, so the same seed
    # gives the same numbers) to bound memory on large sets.
    chunk = max(1, _CHUNK_ELEMENTS // max(n, 1))
    parts: dict = {}
    for start in range(0, n_boot, chunk):
        idx = bootstrap_indices(n, min(chunk, n_boot - start), rng, strata=strata)
        drawn = np.stack([c[idx] for c in cols])
        if strata is not None:
            # Columns of idx belong to fixed systems: system means are means over column blocks.
            _, drawn = group_means(drawn, strata)
        for method in methods:
            for k in range(len(xs)):
                key = method if k == 0 else (method, k)
                parts.setdefault(key, []).append(rowwise(drawn[k], drawn[-1], method))
    return {key: np.concatenate(v) for key, v in parts.items()}


def percentile_ci(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    samples = samples[np.isfinite(samples)]
    if samples.size == 0:
        return math.nan, math.nan
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(samples, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def correlate(metric: Sequence[float], human: Sequence[float], methods: Sequence[str] = METHODS,
              level: str = "turn", *, dialogues: Sequence | None = None,
              systems: Sequence | None = None, n_boot: int = 1000, seed: int = 0,
              confidence: float = 0.95) -> list[Correlation]:
    """One `Correlation` per method: r and p from scipy on the level's points, and a
    percentile bootstrap CI (`n_boot=0` skips it). Warns when the level has < 5 points."""
    for m in methods:
        _check_method(m)
    if n_boot < 0:
        raise DialevalError(f"n_boot must be 0 (no CI) or more, got {n_boot}")
    x, y, _ = level_points(metric, human, level, dialogues=dialogues, systems=systems)
    if len(x) < MIN_POINTS:
        warnings.warn(f"{level}-level correlation over only {len(x)} points", FewPointsWarning,
                      stacklevel=2)
    dists = (bootstrap(metric, human, methods, level, dialogues=dialogues, systems=systems,
                       n_boot=n_boot, seed=seed) if n_boot > 0 and len(x) >= 2 else {})
    out = []
    for method in methods:
        r, p = correlation(x, y, method)
        lo, hi = percentile_ci(dists[method], confidence) if method in dists else (math.nan, math.nan)
        out.append(Correlation(method=method, r=r, p=p, n=len(x), ci_low=lo, ci_high=hi,
                               level=level, n_boot=n_boot if dists else 0, seed=seed))
    return out
