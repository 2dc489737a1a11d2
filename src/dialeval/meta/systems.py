"""Comparing systems: each one's corpus score with a bootstrap confidence interval, paired
significance against a baseline (or between every pair), and how well each metric ranks the
systems as humans do.

The parts live where they are made: a system's value from score rows in `measures` (as `score`
prints it, for every metric by its declaration), which rows are the same item in `pairing`, the
resampling tests and significance marks in `resampling`, human scores in `human`. This module
puts them together (`compare_systems`) and keeps their public names importable from here.

A paired test uses the items *both* systems of that comparison have, however many other systems
lack, and reports how many (`n_paired`); a comparison that loses items to pairing gets a note.
Human scores are treated as a mean measure: a system's human score is the mean over its items
of the items' mean rating. Every run carries a signature
(`compare|test:bs|n:1000|seed:12345|ci:95|version:...`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import DialevalError
from ..stats import kendall_rows
from ..version import __version__
from .human import human_value
from .measures import (Measure, Reducer, RowsMeasure, corpus_reducer, mean_measure,  # noqa: F401
                       measures_from_rows, recompute_stats, row_signatures, rows_measure,
                       score_rows, scored_mask, signature_option, stats_measure, stats_metrics,
                       system_value_of)
from .pairing import PAIR_BY, PAIR_BY_HELP, item_keys, json_key, resolve_pair_by  # noqa: F401
from .resampling import (CI_BOOTSTRAP, DEFAULT_RESAMPLES, DEFAULT_SEED, TESTS,  # noqa: F401
                         approximate_randomization_p, ar_selectors, estimate_ci, fmt_bound,
                         min_attainable_p, p_value, paired_bootstrap_p, resample_counts,
                         resampled_scores, significance_mark)


@dataclass
class Comparison:
    """System scores with CIs and paired tests for every metric (and human quality)."""

    test: str
    n_resamples: int
    seed: int | None
    baseline: str | None
    systems: list[str]
    rows: list[dict] = field(default_factory=list)        # one per (measure, system)
    pairs: list[dict] = field(default_factory=list)       # one per (measure, a, b) when no baseline
    rank: list[dict] = field(default_factory=list)        # Kendall tau metric vs human ranking
    measures: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    pair_by: str = "context"
    warnings: list[str] = field(default_factory=list)     # notes a CLI also shouts on stderr
    remarks: list[str] = field(default_factory=list)      # notes a CLI also says on stderr

    @property
    def signature(self) -> str:
        parts = ["compare", f"test:{self.test}", f"n:{self.n_resamples}",
                 f"seed:{'none' if self.seed is None else self.seed}", "ci:95"]
        if self.test == "ar":
            parts.append(f"bs:{CI_BOOTSTRAP}")
        return "|".join(parts + [f"version:{__version__}"])

    def to_dict(self) -> dict:
        return {"signature": self.signature, "test": self.test, "n_resamples": self.n_resamples,
                "seed": self.seed, "baseline": self.baseline, "systems": self.systems,
                "measures": self.measures, "scores": self.rows, "pairs": self.pairs,
                "rank_agreement": self.rank, "notes": self.notes, "pair_by": self.pair_by}

def compare_systems(rows: Sequence[dict], *, metrics: Sequence[str] | None = None,
                    humans: Sequence[str] = (), system_human: dict[str, dict[str, float]] | None = None,
                    baseline: str | None = None, test: str = "bs", n_resamples: int | None = None,
                    seed: int | None = DEFAULT_SEED, signatures: dict[str, str] | None = None,
                    measures: dict[str, Measure] | None = None,
                    rank_methods: Sequence[str] = ("kendall",), pair_by: str = "auto") -> Comparison:
    """Compare the systems of score `rows` on every metric and human quality.

    `humans`: qualities in the rows' `ratings` to treat like metrics. `system_human`: published
    system means (system -> quality -> value) for data sets without per-item ratings (DSTC6):
    they get no CI or test, but enter the rank agreement. `baseline`: compare every system with
    it; None compares all pairs. `measures` overrides what is built from the rows. `pair_by`:
    how items pair across systems (`PAIR_BY`; see `meta.pairing`).
    """
    if test not in TESTS:
        raise DialevalError(f"unknown test {test!r}; choose from {', '.join(TESTS)}")
    n_resamples = n_resamples or DEFAULT_RESAMPLES[test]
    if n_resamples < 1:
        raise DialevalError("--n-resamples must be at least 1")
    rows = list(rows)
    if not rows:
        raise DialevalError("no rows to compare")
    system_of = [r.get("system") if r.get("system") is not None else "all" for r in rows]
    systems = list(dict.fromkeys(system_of))
    if baseline is not None and baseline not in systems:
        raise DialevalError(f"--baseline {baseline!r} is not a system of the file "
                            f"(systems: {', '.join(systems[:10])}{' ...' if len(systems) > 10 else ''})")
    recompute_notes: list[str] = []
    if measures is None:
        signatures = {**row_signatures(rows), **(signatures or {})}
        measures = measures_from_rows(rows, metrics, signatures, notes=recompute_notes)
    measures = dict(measures)
    metric_names = list(measures)
    human_names = []
    for q in humans:
        values = [human_value(r, q) for r in rows]
        if not np.isfinite(values).any():
            raise DialevalError(f"no row has ratings for {q!r}")
        name = f"human:{q}"
        measures[name] = mean_measure(name, values, f"human|quality:{q}|mean of raters")
        human_names.append(name)

    pair_by, keys = resolve_pair_by(rows, pair_by, system_of)
    # each system's row per key, and one order of keys (the first system's row order, then the
    # keys only later systems have): a pair's items are its common keys in that order
    index: dict[str, dict[Any, int]] = {s: {} for s in systems}
    for i, (s, k) in enumerate(zip(system_of, keys)):
        index[s][k] = i
    global_order: dict[Any, None] = {}
    for s in systems:
        global_order.update(dict.fromkeys(index[s]))
    key_sets = [set(index[s]) for s in systems]
    common = set.intersection(*key_sets)
    aligned = all(len(ks) == len(common) for ks in key_sets)
    order = [k for k in global_order if k in common]
    cmp = Comparison(test=test, n_resamples=n_resamples, seed=seed, baseline=baseline,
                     systems=systems, pair_by=pair_by, notes=list(recompute_notes),
                     remarks=list(recompute_notes))
    cmp.measures = {m: {"kind": measures[m].kind, "signature": measures[m].signature}
                    for m in measures}
    idx_of = {s: np.array([index[s][k] for k in order], dtype=np.int64) for s in systems}
    own_idx = {s: np.array(list(index[s].values()), dtype=np.int64) for s in systems}
    n_common = len(order)
    ci_n = n_resamples if test == "bs" else CI_BOOTSTRAP
    counts_cache: dict[tuple[int, int], np.ndarray] = {}

    def counts(n: int, r: int) -> np.ndarray:
        if (n, r) not in counts_cache:
            counts_cache[(n, r)] = resample_counts(n, r, seed)
        return counts_cache[(n, r)]

    selectors_cache: dict[int, np.ndarray] = {}

    def selectors(n: int) -> np.ndarray:
        if n not in selectors_cache:
            selectors_cache[n] = ar_selectors(n, n_resamples, seed)
        return selectors_cache[n]

    resampled: dict[tuple[str, str], np.ndarray] = {}   # (measure, system) -> aligned resamples
    for name, measure in measures.items():
        for s in systems:
            idx = own_idx[s]
            valid = scored_mask(measure, idx)
            score = measure.score(idx)
            if aligned:
                boot = resampled_scores(measure, idx_of[s], counts(n_common, ci_n))
                resampled[(name, s)] = boot
            else:
                boot = resampled_scores(measure, idx, counts(len(idx), ci_n))
            mean, low, high = estimate_ci(boot)
            row = {"measure": name, "system": s, "n": int(valid.sum()), "score": score,
                   "bs_mean": mean, "ci_low": low, "ci_high": high}
            cmp.rows.append(row)
    # paired tests: per comparison, on the items both of its systems have
    pairs = ([(baseline, s) for s in systems if s != baseline] if baseline is not None
             else [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]])
    by_key = {(r["measure"], r["system"]): r for r in cmp.rows}
    how = PAIR_BY_HELP.get(pair_by, pair_by)
    for a, b in pairs:
        keys_ab = [k for k in global_order if k in index[a] and k in index[b]]
        n_pair = len(keys_ab)
        ia = np.array([index[a][k] for k in keys_ab], dtype=np.int64)
        ib = np.array([index[b][k] for k in keys_ab], dtype=np.int64)
        same_as_aligned = aligned and n_pair == n_common
        lost_a, lost_b = len(index[a]) - n_pair, len(index[b]) - n_pair
        if lost_a or lost_b:
            lost = (f"PAIRING LOST ITEMS: {b} vs {a}: only {n_pair} items pair by {how} "
                    f"({a} has {len(index[a])}, {b} has {len(index[b])}); its delta and test use "
                    f"those {n_pair} only" + ("" if pair_by != "context" else
                                              "; if the items are the same, give them an `item` "
                                              "field or use --pair-by id|dialogue|position"))
            cmp.notes.append(lost)
            cmp.warnings.append(lost)
        limited: dict[str, float] = {}
        for name, measure in measures.items():
            xa, xb, m = ia, ib, n_pair
            if n_pair:   # a paired test compares the items both systems have a score for
                both = scored_mask(measure, ia) & scored_mask(measure, ib)
                if not both.all():
                    xa, xb, m = ia[both], ib[both], int(both.sum())
                    uneven = (f"{name}: {b} vs {a}: the two systems have scores for different items; "
                              f"the delta and test use the {m} of {n_pair} paired items both have "
                              f"({int((~scored_mask(measure, ia)).sum())} unscored in {a}, "
                              f"{int((~scored_mask(measure, ib)).sum())} in {b})")
                    cmp.notes.append(uneven)
                    cmp.warnings.append(uneven)
            if m == 0:
                sa = sb = p = p_min = math.nan
            else:
                sa, sb = measure.score(xa), measure.score(xb)
                differing = int(np.any(measure.stats[xa] != measure.stats[xb], axis=1).sum())
                p_min = min_attainable_p(differing, n_resamples)
                if not (math.isfinite(sa) and math.isfinite(sb)):
                    p = math.nan
                elif test == "bs":
                    c = counts(m, n_resamples)
                    reuse = same_as_aligned and m == n_pair and ci_n == n_resamples
                    ra = resampled.get((name, a)) if reuse else None
                    rb = resampled.get((name, b)) if reuse else None
                    ra = ra if ra is not None else resampled_scores(measure, xa, c)
                    rb = rb if rb is not None else resampled_scores(measure, xb, c)
                    p = paired_bootstrap_p(ra, rb, sb - sa)
                else:
                    p = approximate_randomization_p(measure, xa, measure, xb, selectors(m))
                if math.isfinite(p) and p < 0.05 and p_min >= 0.01:
                    limited[name] = p_min
            fields = {"delta": sb - sa, "p": p, "n_paired": m, "p_min": p_min,
                      "mark": significance_mark(p, p_min)}
            if baseline is not None:
                by_key[(name, b)].update(fields)
            else:
                cmp.pairs.append({"measure": name, "a": a, "b": b, "score_a": sa,
                                  "score_b": sb, **fields})
        if limited:
            bounds = ", ".join(f"{fmt_bound(v)} ({m})" for m, v in limited.items())
            cmp.notes.append(
                f"{b} vs {a}: {n_pair} paired items: the smallest p a paired test can reach on "
                f"them is {bounds}, so no mark below that (2^(1-m), m the items whose outputs "
                "differ, or 1/(resamples+1))")
    # published system means (no per-item data: no CI, no test)
    for q, means in _by_quality(system_human or {}).items():
        name = f"human:{q}"
        if name in measures:
            continue
        cmp.measures[name] = {"kind": "published-system-means",
                              "signature": f"human|quality:{q}|published system means"}
        human_names.append(name)
        for s in systems:
            cmp.rows.append({"measure": name, "system": s, "n": None,
                             "score": means.get(s, math.nan), "bs_mean": math.nan,
                             "ci_low": math.nan, "ci_high": math.nan})
        cmp.notes.append(f"{name}: only system means are published, so it has no CI and no "
                         "significance test; its ranking enters the Kendall tau as fixed")
    cmp.rank = _rank_agreement(cmp, measures, metric_names, human_names, idx_of if aligned else None,
                               counts(n_common, ci_n) if aligned and n_common else None,
                               rank_methods)
    return cmp

def _by_quality(system_human: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for s, vals in system_human.items():
        for q, v in vals.items():
            out.setdefault(q, {})[s] = float(v)
    return out

def _rank_agreement(cmp: Comparison, measures, metric_names, human_names, idx_of, counts,
                    methods: Sequence[str] = ("kendall",)):
    """Correlation across systems between each metric's corpus scores and each human quality's
    system scores (Kendall tau by default), with a percentile bootstrap CI from the same item
    resamples (metric and human resampled together; published system means stay fixed)."""
    from .correlation import correlation, percentile_ci, rowwise

    systems = cmp.systems
    if len(systems) < 3:
        return []
    score = {(r["measure"], r["system"]): r["score"] for r in cmp.rows}
    boot: dict[str, np.ndarray] = {}

    def resampled(name: str) -> np.ndarray:
        if name not in boot:
            boot[name] = np.stack([resampled_scores(measures[name], idx_of[s], counts)
                                   for s in systems], 1)
        return boot[name]

    out = []
    for h in human_names:
        y = np.array([score[(h, s)] for s in systems], dtype=float)
        for m in metric_names:
            x = np.array([score[(m, s)] for s in systems], dtype=float)
            ok = np.isfinite(x) & np.isfinite(y)
            for method in methods:
                r, p = correlation(x[ok], y[ok], method) if ok.sum() >= 3 else (math.nan, math.nan)
                low = high = math.nan
                if counts is not None and idx_of is not None and ok.sum() >= 3:
                    xb = resampled(m)[:, ok]
                    yb = resampled(h)[:, ok] if h in measures else np.broadcast_to(y[ok], xb.shape)
                    low, high = percentile_ci(kendall_rows(xb, yb) if method == "kendall"
                                              else rowwise(xb, yb, method))
                out.append({"metric": m, "human": h, "method": method, "r": r, "p": p,
                            "ci_low": low, "ci_high": high, "n_systems": int(ok.sum())})
    return out


__all__ = ["Comparison", "Measure", "compare_systems", "score_rows", "measures_from_rows",
           "mean_measure", "stats_measure", "RowsMeasure", "rows_measure", "system_value_of", "resample_counts", "ar_selectors", "estimate_ci",
           "paired_bootstrap_p", "approximate_randomization_p", "p_value", "item_keys",
           "resolve_pair_by", "min_attainable_p", "PAIR_BY", "kendall_rows",
           "significance_mark", "human_value", "TESTS", "DEFAULT_SEED", "DEFAULT_RESAMPLES"]
