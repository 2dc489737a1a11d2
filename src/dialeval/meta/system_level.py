"""System-level correlation on the system scores `dialeval score` prints.

A system's metric score is its *corpus* score, the one definition `score`'s table, `compare`
and the HTML report use: corpus BLEU and METEOR from the summed statistics rows of its items,
the mean of sentence scores for the metrics whose corpus score is that mean. (A mean of sentence
BLEU is another number: the issue that led here found 0.3124 against 0.4326 for one system.)
A system's human score is the mean over its rated items of each item's mean rating.

The bootstrap resamples the items *within each system* (there are too few systems to resample
them) and recomputes every system's corpus score and human mean on each resample, drawn as
`correlation.bootstrap` draws its stratified resamples, in chunks of a fixed size so that a seed
gives the same numbers on any machine.
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np

from ..errors import DialevalError
from .correlation import (MIN_POINTS, _CHUNK_ELEMENTS, Correlation, FewPointsWarning,
                          bootstrap_indices, correlation, percentile_ci, rowwise)
from .significance import Comparison, williams_on_points
from .human import rated_systems, system_human_means
from .measures import Measure

MIN_SYSTEMS = 5
"""Below this many systems a system-level correlation is *descriptive only*: its r is printed,
but no p-value, no CI and no significance or "top group" mark.

Why 5. The systems are the sample: with n of them there are n! rankings, equally likely under
"no relation", so the smallest two-sided permutation p of Spearman's rho or Kendall's tau is
2/n!: 1 at n = 2, 0.33 at n = 3, 0.083 at n = 4, 0.017 at n = 5, 0.0028 at n = 6. Below 5
systems no rank test can reach p < 0.05 at all, whatever the scores; from 5 on it can (not
p < 0.01 until 6). scipy's Spearman p is a t approximation that ignores this (a perfect ranking
of 3 systems gets p = 0); Pearson's t-test at n = 3 has 1 degree of freedom and rests wholly on
normality; Williams' test needs n > 3; and a bootstrap over 3 or 4 systems redraws the same few
points, so its CI collapses (`[1.0000, 1.0000]`).
"""


def descriptive_reason(n_systems: int) -> str | None:
    """Why a system-level correlation over `n_systems` systems is descriptive only (a caveat
    line for the CLI and the report), or None from `MIN_SYSTEMS` systems on."""
    if n_systems >= MIN_SYSTEMS:
        return None
    bound = 2 / math.factorial(max(n_systems, 1))
    return (f"system level: only {n_systems} system{'s' if n_systems != 1 else ''}: descriptive "
            f"only, no test can reach significance (the smallest two-sided rank p over "
            f"{n_systems} systems is 2/{n_systems}! = {min(bound, 1.0):.2g}; p < 0.05 needs at least "
            f"{MIN_SYSTEMS} systems), so r is shown without p, CI or marks")


DEFINITION = ("system level: each system's corpus score, as `dialeval score` prints it (corpus "
              "BLEU/METEOR from summed statistics, distinct-n/entropy-n recomputed from the "
              "system's responses, the mean of sentence scores for the other metrics), against "
              "the mean of its items' human ratings")


def _groups(systems: Sequence, human: np.ndarray) -> tuple[list, list[np.ndarray]]:
    """Systems with at least one rated item, and each one's rows (all of them: the corpus score
    is over every item, as the score table's)."""
    if systems is None or any(s is None for s in systems):
        raise DialevalError("system-level correlation needs 'system' on every sample")
    return rated_systems(human, systems)


def system_points(measures: Sequence[Measure], human: Sequence[float], systems: Sequence
                  ) -> tuple[list, np.ndarray, np.ndarray]:
    """(system names, (len(measures), S) corpus scores, (S,) human means)."""
    h = np.asarray(human, dtype=float)
    names, idx = _groups(systems, h)
    x = np.array([[m.score(i) for i in idx] for m in measures], dtype=float).reshape(len(measures), len(idx))
    y = np.array(list(system_human_means(h, systems).values()), dtype=float)
    return names, x, y


def _bootstrap(measures: Sequence[Measure], human: np.ndarray, systems: Sequence, n_boot: int,
               seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Per measure (n_boot, S) resampled corpus scores, and (n_boot, S) resampled human means."""
    h = np.asarray(human, dtype=float)
    names, idx = _groups(systems, h)
    rows = np.concatenate(idx) if idx else np.zeros(0, dtype=np.int64)
    strata = np.concatenate([np.full(len(i), k) for k, i in enumerate(idx)]) if idx else rows
    n = len(rows)
    rated = np.isfinite(h[rows])
    hv = np.where(rated, h[rows], 0.0)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_ELEMENTS // max(n, 1))
    xs: list[list[np.ndarray]] = [[] for _ in measures]
    ys: list[np.ndarray] = []
    bounds = np.cumsum([0] + [len(i) for i in idx])
    for start in range(0, n_boot, chunk):
        r = min(chunk, n_boot - start)
        draw = bootstrap_indices(n, r, rng, strata=strata.tolist())
        flat = (np.arange(r)[:, None] * n + draw).ravel()
        counts = np.bincount(flat, minlength=r * n).reshape(r, n).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            ys.append(np.stack([(counts[:, a:b] @ hv[a:b]) / (counts[:, a:b] @ rated[a:b])
                                for a, b in zip(bounds, bounds[1:])], axis=1))
        for k, m in enumerate(measures):
            xs[k].append(np.stack([m.resampled(rows[a:b], counts[:, a:b])
                                   for a, b in zip(bounds, bounds[1:])], axis=1))
    return ([np.concatenate(x) if x else np.zeros((0, len(idx))) for x in xs],
            np.concatenate(ys) if ys else np.zeros((0, len(idx))))


def correlate_systems(measure: Measure, human: Sequence[float], systems: Sequence,
                      methods: Sequence[str], *, n_boot: int = 1000, seed: int = 0,
                      confidence: float = 0.95) -> list[Correlation]:
    """One Correlation per method across systems: corpus scores against human means."""
    h = np.asarray(human, dtype=float)
    _, x, y = system_points([measure], h, systems)
    ok = np.isfinite(x[0]) & np.isfinite(y)
    if ok.sum() < MIN_POINTS:
        warnings.warn(f"system-level correlation over only {int(ok.sum())} points",
                      FewPointsWarning, stacklevel=2)
    dist = None
    if n_boot > 0 and ok.sum() >= 2:
        xb, yb = _bootstrap([measure], h, systems, n_boot, seed)
        dist = (xb[0][:, ok], yb[:, ok])
    out = []
    for method in methods:
        r, p = correlation(x[0][ok], y[ok], method)
        lo = hi = math.nan
        if dist is not None:
            lo, hi = percentile_ci(rowwise(dist[0], dist[1], method), confidence)
        out.append(Correlation(method=method, r=r, p=p, n=int(ok.sum()), ci_low=lo, ci_high=hi,
                               level="system", n_boot=n_boot if dist is not None else 0, seed=seed))
    return out


def compare_system_level(measure_a: Measure, measure_b: Measure, human: Sequence[float],
                         systems: Sequence, *, method: str = "pearson", n_boot: int = 1000,
                         seed: int = 0, names: tuple[str, str] = ("a", "b"),
                         confidence: float = 0.95) -> Comparison:
    """Williams' test and a paired bootstrap for r(A, human) > r(B, human) across systems, on
    the systems' corpus scores (see `significance.compare` for the item levels)."""
    h = np.asarray(human, dtype=float)
    _, x, y = system_points([measure_a, measure_b], h, systems)
    ok = np.isfinite(x[0]) & np.isfinite(x[1]) & np.isfinite(y)
    xa, xb, y = x[0][ok], x[1][ok], y[ok]
    r_a, r_b, r_ab, t, p = williams_on_points(xa, xb, y, method)
    boot_p = lo = hi = math.nan
    if n_boot > 0 and len(y) >= 2:
        (ba, bb), yb = _bootstrap([measure_a, measure_b], h, systems, n_boot, seed)
        diff = rowwise(ba[:, ok], yb[:, ok], method) - rowwise(bb[:, ok], yb[:, ok], method)
        diff = diff[np.isfinite(diff)]
        if diff.size:
            boot_p = float(np.mean(diff <= 0))
            alpha = (1 - confidence) / 2
            lo, hi = (float(v) for v in np.quantile(diff, [alpha, 1 - alpha]))
    return Comparison(metric_a=names[0], metric_b=names[1], method=method, level="system",
                      n=len(y), r_a=r_a, r_b=r_b, r_ab=r_ab, williams_t=t, williams_p=p,
                      bootstrap_p=boot_p, diff_ci_low=lo, diff_ci_high=hi, n_boot=n_boot,
                      seed=seed)


__all__ = ["DEFINITION", "MIN_SYSTEMS", "descriptive_reason", "system_points", "correlate_systems", "compare_system_level"]
