"""Comparing systems: corpus scores with bootstrap confidence intervals and paired significance.

A system's corpus score is recomputed on every resample from the per-sample statistics rows,
so corpus BLEU is BLEU of the *summed* n-gram statistics of the resampled items, never a mean
of sentence BLEU. Metrics whose corpus score is the mean of sentence scores (ROUGE-L, CIDEr,
embedding metrics, ...) resample those sentence scores. Human scores are treated as such a
mean: a system's human score is the mean over its items of the items' mean rating.

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

Every run carries a signature (`compare|test:bs|n:1000|seed:12345|ci:95|version:...`).

Items are aligned across systems by a key: the sample's context and references (and which
occurrence of that pair it is); rows without either are aligned by their position within their
system. Paired tests use the items that both systems have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import DialevalError
from ..version import __version__

TESTS = ("bs", "ar")
DEFAULT_RESAMPLES = {"bs": 1000, "ar": 10000}
DEFAULT_SEED = 12345  # sacreBLEU's SACREBLEU_SEED default
CI_BOOTSTRAP = 1000   # resamples for the CIs when the test is AR (sacreBLEU's --paired-ar-confidence-n)

Reducer = Callable[[np.ndarray], np.ndarray]   # (R, k) summed statistics -> (R,) scores


# --- statistics rows ---------------------------------------------------------------------------

def stats_metrics(result) -> dict[str, Any]:
    """The metrics of a ScoreResult whose corpus score is *not* the mean of sentence scores
    (corpus BLEU, METEOR with `refs_mode multi`), as built Metric objects by name."""
    from ..metrics.registry import build_metric

    out = {}
    for name in result.metrics:
        try:
            metric = build_metric(name)
        except DialevalError:
            continue
        if metric.corpus_from_summed_stats and name in result.stats:
            sig = result.signatures.get(name, "")
            if "refs:max" in sig or "refs:mean" in sig:
                continue          # single-reference modes: the corpus score is a mean
            out[name] = metric
    return out


def score_rows(result, *, with_stats: bool = True) -> list[dict]:
    """Rows as `dialeval score -o` writes them, plus (with `with_stats`) each sample's response,
    references and the statistics rows of the metrics that reduce summed statistics: what
    `compare` and `report` need to recompute corpus scores on resamples. The first row also
    carries `signatures` (metric -> signature), once per file rather than on every row."""
    rows = list(result.records())
    if not with_stats:
        return rows
    summed = stats_metrics(result)
    if rows:
        rows[0]["signatures"] = dict(result.signatures)   # once per file: how each score was made
    for i, (row, sample) in enumerate(zip(rows, result.samples)):
        row["response"] = sample.response
        row["references"] = list(sample.references)
        if summed:
            row["stats"] = {m: [float(v) for v in result.stats[m][i]] for m in summed}
    return rows


def row_signatures(rows: Sequence[dict]) -> dict[str, str]:
    """The metric signatures recorded in score rows (`signatures` on a file's first row); when
    files were concatenated, a metric signed differently in two of them is refused."""
    out: dict[str, str] = {}
    for row in rows:
        for metric, sig in (row.get("signatures") or {}).items():
            if out.setdefault(metric, sig) != sig:
                raise DialevalError(f"{metric} is scored two ways in this file: {out[metric]!r} "
                                    f"and {sig!r}; compare scores made the same way")
    return out


def _float(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def human_value(row: dict, quality: str) -> float:
    """The mean of a row's ratings for `quality` (NaN when it has none)."""
    values = (row.get("ratings") or {}).get(quality)
    if values is None:
        return math.nan
    if not isinstance(values, list):
        values = [values]
    vals = [float(v) for v in values if isinstance(v, (int, float)) and v == v]
    return sum(vals) / len(vals) if vals else math.nan


def item_keys(rows: Sequence[dict]) -> list[tuple]:
    """A key per row that is equal for the same evaluated item in every system."""
    seen: dict[tuple, int] = {}
    keys = []
    for row in rows:
        context = tuple(row.get("context") or ())
        refs = tuple(row.get("references") or ())
        system = row.get("system")
        base = (context, refs) if (context or refs) else ()
        k = seen.get((system, base), 0)
        seen[(system, base)] = k + 1
        keys.append((base, k))
    return keys


# --- one metric's data ------------------------------------------------------------------------

@dataclass
class Measure:
    """Per-sample statistics of one metric (or of a human quality) and how they reduce."""

    name: str
    stats: np.ndarray          # (n_rows, k); invalid rows are all zeros
    reduce: Reducer
    kind: str                  # "corpus-stats" or "mean"
    signature: str = ""

    def score(self, idx: np.ndarray) -> float:
        return float(self.reduce(self.stats[idx].sum(axis=0, keepdims=True))[0])


def _mean_reduce(total: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total[:, 1] > 0, total[:, 0] / np.where(total[:, 1] > 0, total[:, 1], 1),
                        np.nan)


def mean_measure(name: str, values: Sequence[float], signature: str = "") -> Measure:
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    stats = np.stack([np.where(ok, v, 0.0), ok.astype(float)], axis=1)
    return Measure(name, stats, _mean_reduce, "mean", signature)


def corpus_reducer(metric) -> Reducer:
    """Vectorised corpus score of summed statistics rows for a built Metric."""
    from ..metrics.overlap.bleu import Bleu, bleu_from_stats

    if isinstance(metric, Bleu):
        return lambda total: bleu_from_stats(total, metric.order)
    return lambda total: np.array([metric.corpus_from_stats(row) for row in total])


def stats_measure(name: str, rows_stats: Sequence[Sequence[float] | None], metric,
                  signature: str = "") -> Measure:
    width = max((len(r) for r in rows_stats if r is not None), default=0)
    stats = np.zeros((len(rows_stats), width))
    for i, r in enumerate(rows_stats):
        if r is None:
            continue
        arr = np.array([_float(v) for v in r])
        if np.isfinite(arr).all():
            stats[i] = arr
    return Measure(name, stats, corpus_reducer(metric), "corpus-stats", signature)


def measures_from_rows(rows: Sequence[dict], metrics: Sequence[str] | None = None,
                       signatures: dict[str, str] | None = None) -> dict[str, Measure]:
    """A Measure per metric of score rows; metrics with `stats` reduce them (corpus BLEU)."""
    from ..metrics.registry import build_metric

    if metrics is None:
        metrics = list(rows[0]["scores"])
    signatures = signatures or {}
    out = {}
    for m in metrics:
        if any(m not in (r.get("scores") or {}) for r in rows):
            raise DialevalError(f"metric {m!r} is not in every row of the scores file")
        has_stats = all(m in (r.get("stats") or {}) for r in rows)
        metric = None
        try:
            metric = build_metric(m)
        except DialevalError:
            pass
        if has_stats and metric is not None:
            out[m] = stats_measure(m, [r["stats"][m] for r in rows], metric, signatures.get(m, ""))
        elif (metric is not None and metric.corpus_from_summed_stats
              and "refs:max" not in signatures.get(m, "") and "refs:mean" not in signatures.get(m, "")
              and not any("stats" in r for r in rows)):
            raise DialevalError(
                f"{m}: its corpus score comes from summed statistics, which the scores file lacks; "
                "write it with `dialeval score --with-stats -o FILE` (or leave it out with --metrics)")
        else:
            out[m] = mean_measure(m, [_float(r["scores"][m]) for r in rows], signatures.get(m, ""))
    return out


# --- resampling --------------------------------------------------------------------------------

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
    return measure.reduce(counts @ measure.stats[idx])


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
    return p_value(diffs - diffs.mean(), abs(observed))


def approximate_randomization_p(measure_a: Measure, idx_a: np.ndarray, measure_b: Measure,
                                idx_b: np.ndarray, selectors: np.ndarray) -> float:
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


# --- the comparison --------------------------------------------------------------------------

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
                "rank_agreement": self.rank, "notes": self.notes}


def compare_systems(rows: Sequence[dict], *, metrics: Sequence[str] | None = None,
                    humans: Sequence[str] = (), system_human: dict[str, dict[str, float]] | None = None,
                    baseline: str | None = None, test: str = "bs", n_resamples: int | None = None,
                    seed: int | None = DEFAULT_SEED, signatures: dict[str, str] | None = None,
                    measures: dict[str, Measure] | None = None,
                    rank_methods: Sequence[str] = ("kendall",)) -> Comparison:
    """Compare the systems of score `rows` on every metric and human quality.

    `humans`: qualities in the rows' `ratings` to treat like metrics. `system_human`: published
    system means (system -> quality -> value) for data sets without per-item ratings (DSTC6):
    they get no CI or test, but enter the rank agreement. `baseline`: compare every system with
    it; None compares all pairs. `measures` overrides what is built from the rows.
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
    if measures is None:
        signatures = {**row_signatures(rows), **(signatures or {})}
        measures = measures_from_rows(rows, metrics, signatures)
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

    keys = item_keys(rows)
    # items aligned across systems: a common order of keys, and each system's row per key
    index: dict[str, dict[tuple, int]] = {s: {} for s in systems}
    for i, (s, k) in enumerate(zip(system_of, keys)):
        index[s][k] = i
    key_sets = [set(index[s]) for s in systems]
    common = set.intersection(*key_sets)
    aligned = all(len(ks) == len(common) for ks in key_sets)
    order = [k for k in index[systems[0]] if k in common]
    cmp = Comparison(test=test, n_resamples=n_resamples, seed=seed, baseline=baseline,
                     systems=systems)
    if not aligned:
        cmp.notes.append(f"systems do not share the same items; paired tests use the "
                         f"{len(common)} items all systems have")
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

    selectors = ar_selectors(n_common, n_resamples, seed) if test == "ar" and n_common else None
    resampled: dict[tuple[str, str], np.ndarray] = {}   # (measure, system) -> aligned resamples
    for name, measure in measures.items():
        for s in systems:
            idx = own_idx[s]
            valid = measure.stats[idx].any(axis=1) if measure.kind == "corpus-stats" else \
                measure.stats[idx, 1] > 0
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
    # paired tests
    pairs = ([(baseline, s) for s in systems if s != baseline] if baseline is not None
             else [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]])
    by_key = {(r["measure"], r["system"]): r for r in cmp.rows}
    if n_common:
        for name, measure in measures.items():
            for a, b in pairs:
                ia, ib = idx_of[a], idx_of[b]
                sa, sb = measure.score(ia), measure.score(ib)
                if not (math.isfinite(sa) and math.isfinite(sb)):
                    p = math.nan
                elif test == "bs":
                    c = counts(n_common, n_resamples)
                    ra = resampled.get((name, a)) if aligned and ci_n == n_resamples else None
                    rb = resampled.get((name, b)) if aligned and ci_n == n_resamples else None
                    ra = ra if ra is not None else resampled_scores(measure, ia, c)
                    rb = rb if rb is not None else resampled_scores(measure, ib, c)
                    p = paired_bootstrap_p(ra, rb, sb - sa)
                else:
                    p = approximate_randomization_p(measure, ia, measure, ib, selectors)
                if baseline is not None:
                    row = by_key[(name, b)]
                    row["delta"] = sb - sa
                    row["p"] = p
                else:
                    cmp.pairs.append({"measure": name, "a": a, "b": b, "score_a": sa,
                                      "score_b": sb, "delta": sb - sa, "p": p})
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


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row of `x` with the same row of `y`, vectorised over rows: the
    O(n^2) pair signs are cheap for the few points of a system ranking (scipy per row is not)."""
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


def significance_mark(p: float | None) -> str:
    """`**` p < 0.01, `*` p < 0.05 (no correction for multiple comparisons)."""
    if p is None or not isinstance(p, float) or not math.isfinite(p):
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


__all__ = ["Comparison", "Measure", "compare_systems", "score_rows", "measures_from_rows",
           "mean_measure", "stats_measure", "resample_counts", "ar_selectors", "estimate_ci",
           "paired_bootstrap_p", "approximate_randomization_p", "p_value", "item_keys",
           "significance_mark", "human_value", "TESTS", "DEFAULT_SEED", "DEFAULT_RESAMPLES"]
