"""Is metric A's correlation with the humans higher than metric B's?

Both correlations share the human scores and are computed on the same items, so they are
dependent: comparing their confidence intervals, or a test for independent correlations, is
wrong. Two answers, reported side by side:

- Williams' (1959) t-test for dependent correlations sharing one variable, as Graham &
  Baldwin (2014) use it for MT metrics: it needs r(A,human), r(B,human) and r(A,B).
- A paired bootstrap: resample the items once per round, recompute both correlations on the
  same resample, and count how often A fails to beat B.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from .correlation import bootstrap, correlation, level_points


@dataclass
class Comparison:
    metric_a: str
    metric_b: str
    method: str
    level: str
    n: int
    r_a: float
    r_b: float
    r_ab: float
    williams_t: float
    williams_p: float          # one-sided, H1: r_a > r_b
    bootstrap_p: float         # share of resamples where r_a <= r_b
    diff_ci_low: float
    diff_ci_high: float
    n_boot: int
    seed: int

    def to_dict(self) -> dict:
        return asdict(self)


def williams_on_points(xa, xb, y, method: str) -> tuple[float, float, float, float, float]:
    """(r(A, human), r(B, human), r(A, B), t, p) of Williams' test on paired points."""
    r_a, _ = correlation(xa, y, method)
    r_b, _ = correlation(xb, y, method)
    r_ab, _ = correlation(xa, xb, method)
    t, p = williams_test(r_a, r_b, r_ab, len(y))
    return r_a, r_b, r_ab, t, p


def williams_test(r12: float, r13: float, r23: float, n: int, *,
                  two_sided: bool = False) -> tuple[float, float]:
    """Williams' t for H0: rho12 = rho13, variable 1 shared (the humans), 2 and 3 the metrics.

    t = (r12 - r13) sqrt((n-1)(1+r23)) / sqrt(2 K (n-1)/(n-3) + (r12+r13)^2/4 (1-r23)^3),
    K = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23, with n - 3 degrees of freedom.
    Returns (t, p); p is one-sided (r12 > r13) unless `two_sided`.
    """
    from scipy import stats

    if n <= 3 or not all(math.isfinite(v) for v in (r12, r13, r23)):
        return math.nan, math.nan
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    den = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    if den <= 0:
        return math.nan, math.nan
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(den)
    df = n - 3
    p = 2 * stats.t.sf(abs(t), df) if two_sided else stats.t.sf(t, df)
    return float(t), float(p)


def compare(metric_a: Sequence[float], metric_b: Sequence[float], human: Sequence[float], *,
            method: str = "pearson", level: str = "turn", dialogues: Sequence | None = None,
            systems: Sequence | None = None, n_boot: int = 1000, seed: int = 0,
            names: tuple[str, str] = ("a", "b"), confidence: float = 0.95) -> Comparison:
    """Williams' test and a paired bootstrap for r(A, human) > r(B, human).

    Items where A, B or the human score is missing are left out of both, so the two
    correlations are always over the same points."""
    a = np.asarray(metric_a, dtype=float)
    b = np.asarray(metric_b, dtype=float)
    h = np.asarray(human, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(h)
    a, b, h = (np.where(ok, v, np.nan) for v in (a, b, h))
    xa, y, _ = level_points(a, h, level, dialogues=dialogues, systems=systems)
    xb, _, _ = level_points(b, h, level, dialogues=dialogues, systems=systems)
    r_a, r_b, r_ab, t, p = williams_on_points(xa, xb, y, method)
    boot_p = lo = hi = math.nan
    if n_boot > 0 and len(y) >= 2:
        dist = bootstrap(a, h, [method], level, dialogues=dialogues, systems=systems,
                         n_boot=n_boot, seed=seed, extra=[b])
        diff = dist[method] - dist[(method, 1)]
        diff = diff[np.isfinite(diff)]
        if diff.size:
            boot_p = float(np.mean(diff <= 0))
            alpha = (1 - confidence) / 2
            lo, hi = (float(v) for v in np.quantile(diff, [alpha, 1 - alpha]))
    return Comparison(metric_a=names[0], metric_b=names[1], method=method, level=level,
                      n=len(y), r_a=r_a, r_b=r_b, r_ab=r_ab, williams_t=t, williams_p=p,
                      bootstrap_p=boot_p, diff_ci_low=lo, diff_ci_high=hi, n_boot=n_boot,
                      seed=seed)
