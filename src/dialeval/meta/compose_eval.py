"""Judging a composition honestly: leave one development set out, and paired bootstraps.

`leave_one_set_out` fits a fresh composition on every set but one and scores the held-out
set's qualities with it, so no weight ever saw the humans it is tested against. A held-out
quality that no remaining set rates is scored with the pooled weights and flagged
(`fallback`). `paired_mean_difference` asks whether method A beats method B on average over
(set, quality) pairs: every pair's items are resampled once per round, both methods' Spearman
r are recomputed on the same resample (meta.correlation.bootstrap), and the per-round mean of
r(A) - r(B) over the pairs gives the distribution of the average difference (sets are
independent, so each is resampled on its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..stats import spearman_finite
from .correlation import bootstrap


@dataclass
class HeldOut:
    """One held-out (set, quality) scored by one method."""

    set: str
    quality: str
    method: str
    r: float
    n: int
    fallback: bool
    pred: np.ndarray = field(repr=False)
    human: np.ndarray = field(repr=False)

    def to_dict(self) -> dict:
        return {"set": self.set, "quality": self.quality, "method": self.method, "r": self.r,
                "n": self.n, "fallback": self.fallback}


def leave_one_set_out(devsets: Sequence[Any], methods: dict[str, Callable[[], Any]],
                      metrics: Sequence[str]) -> list[HeldOut]:
    """For every set, fit each method's model on the others and score that set's qualities.

    `devsets`: `metrics.compose.model.DevSet`s; `methods` maps a label to a factory of unfitted
    models (e.g. `lambda: ComposeModel(p=2)`). They come from the caller, so that meta/ imports
    no metric family: anything with `fit(devsets, metrics)`, `predict(scores, quality)` and
    `fallback_used(quality)` is judged the same way."""
    out: list[HeldOut] = []
    for k, held in enumerate(devsets):
        rest = [d for j, d in enumerate(devsets) if j != k]
        for label, make in methods.items():
            model = make().fit(rest, metrics)
            for q in sorted(held.human):
                pred = model.predict(held.scores, q)
                human = held.human[q]
                ok = np.isfinite(pred) & np.isfinite(human)
                out.append(HeldOut(held.name, q, label, spearman_finite(pred, human), int(ok.sum()),
                                   model.fallback_used(q), pred, human))
    return out


@dataclass
class Difference:
    a: str
    b: str
    pairs: int
    mean_diff: float          # mean over pairs of r(A) - r(B)
    ci_low: float
    ci_high: float
    p: float                  # share of resamples where the mean difference <= 0
    wins: int                 # pairs where r(A) > r(B)
    n_boot: int
    seed: int

    def to_dict(self) -> dict:
        return dict(vars(self))


def paired_mean_difference(rows: Sequence[HeldOut], a: str, b: str, *, n_boot: int = 1000,
                           seed: int = 0, confidence: float = 0.95,
                           keep: Callable[[HeldOut], bool] | None = None) -> Difference:
    """Mean over (set, quality) pairs of r(A) - r(B), with a paired bootstrap CI and p."""
    by_key: dict[tuple[str, str], dict[str, HeldOut]] = {}
    for row in rows:
        if keep is None or keep(row):
            by_key.setdefault((row.set, row.quality), {})[row.method] = row
    diffs, dists, wins = [], [], 0
    for i, ((_, _), got) in enumerate(sorted(by_key.items())):
        if a not in got or b not in got:
            continue
        ra, rb = got[a], got[b]
        if not (math.isfinite(ra.r) and math.isfinite(rb.r)):
            continue
        diffs.append(ra.r - rb.r)
        wins += ra.r > rb.r
        if n_boot > 0:
            dist = bootstrap(ra.pred, ra.human, ["spearman"], "turn", n_boot=n_boot,
                             seed=seed + i, extra=[rb.pred])
            dists.append(dist["spearman"] - dist[("spearman", 1)])
    if not diffs:
        return Difference(a, b, 0, math.nan, math.nan, math.nan, math.nan, 0, n_boot, seed)
    lo = hi = p = math.nan
    if dists:
        mean_dist = np.nanmean(np.stack(dists), axis=0)
        alpha = (1 - confidence) / 2
        lo, hi = (float(v) for v in np.quantile(mean_dist, [alpha, 1 - alpha]))
        p = float(np.mean(mean_dist <= 0))
    return Difference(a, b, len(diffs), float(np.mean(diffs)), lo, hi, p, int(wins), n_boot, seed)


def mean_r(rows: Sequence[HeldOut], method: str) -> float:
    """Mean held-out r of `method` over its (set, quality) pairs; a pair where the composition
    could not score (no metric available, or a constant score) counts as r = 0, so that
    compositions are always averaged over the same pairs."""
    vals = [r.r if math.isfinite(r.r) else 0.0 for r in rows if r.method == method]
    return float(np.mean(vals)) if vals else math.nan
