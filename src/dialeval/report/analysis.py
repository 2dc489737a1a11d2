"""What the HTML report shows, computed and nothing drawn: the system comparison, the
metric-human correlations with Williams' marks, the data behind each figure, rater agreement
and the samples where metric and humans disagree most.

Kept apart from the layout (`html.py`, `figures.py`) so that a number in the report can be
checked, or reused, without matplotlib or Jinja2, and so that the page can change without
touching a statistic. Every number comes from `meta/`; this module only chooses what to ask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

CORR_METHODS = ("pearson", "spearman", "kendall")
WILLIAMS_METHODS = ("pearson", "spearman")


@dataclass(frozen=True)
class ReportSettings:
    """The analysis's choices, in one object so that a command passes them on unchanged.

    `qualities`: rated qualities to analyse (default: `overall`, or all). `system_human`:
    published system means for sets without per-item ratings. `signatures`: metric ->
    signature, over the ones the rows record. The rest are `meta.systems.compare_systems`'s
    (`metrics`, `baseline`, `test`, `n_resamples`, `seed`, `pair_by`) and the correlations'
    bootstrap (`n_boot`, `corr_seed`, which also seeds the scatter plots' jitter); `top_k`
    disagreeing samples are listed per metric and quality."""

    qualities: Sequence[str] | None = None
    system_human: dict[str, dict[str, float]] | None = None
    signatures: dict[str, str] | None = None
    metrics: Sequence[str] | None = None
    baseline: str | None = None
    test: str = "bs"
    n_resamples: int | None = None
    seed: int = 12345
    n_boot: int = 1000
    corr_seed: int = 0
    top_k: int = 5
    pair_by: str = "auto"


@dataclass
class Scatter:
    """One scatter figure's points: a turn-level one (per item, human means jittered when
    drawn with `seed`) or a system-level one (one point per system, with CIs)."""

    level: str
    metric: str
    quality: str
    x: Any
    y: Any
    systems: list[str]
    r: float
    seed: int = 0
    x_ci: list[tuple[float, float]] | None = None
    y_ci: list[tuple[float, float]] | None = None


@dataclass
class ReportAnalysis:
    """Every number of the report, and the data its figures draw (see `html.report_data`)."""

    n_rows: int
    signatures: dict[str, str]
    baseline: str | None
    comparison: Any                     # meta.systems' comparison (warnings, remarks)
    cmp: dict                           # its `to_dict()`
    metric_names: list[str]
    human_names: list[str]
    systems: list[str]
    system_rows: list[dict]
    correlations: list[dict]
    caveats: list[str]
    scatter: list[Scatter]
    disagreements: list[dict]
    heatmap: np.ndarray | None          # Spearman between metrics, turn level (two metrics or more)
    agreement: list[dict]
    settings: ReportSettings = field(default_factory=ReportSettings)


def finite(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def default_qualities(rows: Sequence[dict]) -> list[str]:
    """`overall` when rated, else every rated quality (in first-seen order)."""
    found = list(dict.fromkeys(q for r in rows for q in (r.get("ratings") or {})))
    return ["overall"] if "overall" in found else found


def analyse(rows: Sequence[dict], settings: ReportSettings | None = None, *, comparison=None) -> ReportAnalysis:
    """The report's numbers for score rows (`dialeval score --with-stats -o`, or
    `meta.systems.score_rows`); `comparison`: an already computed `compare_systems` result."""
    from ..meta.systems import compare_systems, human_value, row_signatures

    s = settings or ReportSettings()
    rows = list(rows)
    signatures = {**row_signatures(rows), **(s.signatures or {})}
    qualities = default_qualities(rows) if s.qualities is None else s.qualities
    item_qualities = [q for q in qualities
                      if any(math.isfinite(human_value(r, q)) for r in rows)]
    systems_all = list(dict.fromkeys(r.get("system") if r.get("system") is not None else "all"
                                     for r in rows))
    baseline = s.baseline
    if baseline is None and len(systems_all) > 1:
        baseline = systems_all[0]
    if comparison is None:
        comparison = compare_systems(rows, metrics=s.metrics, humans=item_qualities,
                                     system_human=s.system_human, baseline=baseline, test=s.test,
                                     n_resamples=s.n_resamples, seed=s.seed, signatures=signatures,
                                     rank_methods=CORR_METHODS, pair_by=s.pair_by)
    cmp = comparison.to_dict()
    metric_names = [m for m in cmp["measures"] if not m.startswith("human:")]
    human_names = [m for m in cmp["measures"] if m.startswith("human:")]
    systems = cmp["systems"]
    score_of = {(r["measure"], r["system"]): r for r in cmp["scores"]}
    values = {m: np.array([_num(r["scores"].get(m)) for r in rows]) for m in metric_names}

    corr_rows: list[dict] = []
    scatter: list[Scatter] = []
    disagreements: list[dict] = []
    for q in item_qualities:
        _item_level(rows, q, values, metric_names, s, corr_rows, scatter, disagreements)
    caveats: list[str] = []
    if len(systems) >= 3:
        for h in human_names:
            _system_level(h, cmp, score_of, systems, metric_names, corr_rows, scatter, caveats)

    heatmap = None
    if len(metric_names) > 1:
        from ..meta.matrix import correlation_matrix

        heatmap = correlation_matrix(values, "spearman")
    return ReportAnalysis(
        n_rows=len(rows), signatures=signatures, baseline=baseline, comparison=comparison, cmp=cmp,
        metric_names=metric_names, human_names=human_names, systems=systems,
        system_rows=_system_rows(systems, metric_names, human_names, score_of, baseline),
        correlations=corr_rows, caveats=caveats, scatter=scatter, disagreements=disagreements,
        heatmap=heatmap, agreement=_agreement(rows, item_qualities, s.corr_seed), settings=s)


def check_qualities(rows: Sequence[dict], asked: Sequence[str] | None,
                    system_human: dict[str, dict[str, float]] | None = None) -> None:
    """A quality asked for by name (`report --human Overall`) that no row rates, nor the
    published system means, is a typo: refused as `compare` and `correlate` refuse it, naming
    the closest rated one, instead of a report silently without it (`analyse` itself leaves
    out qualities without ratings: `evaluate` hands it every quality of a set)."""
    from ..errors import DialevalError
    from ..meta.systems import human_value
    from ..options import closest_hint

    published = {q for means in (system_human or {}).values() for q in means}
    missing = [q for q in asked or () if q not in published
               and not any(math.isfinite(human_value(r, q)) for r in rows)]
    if not missing:
        return
    present = list(dict.fromkeys(q for r in rows for q in (r.get("ratings") or {})))
    q = missing[0]
    raise DialevalError(f"no row has ratings for {q!r}{closest_hint(q, present)} (rated qualities: "
                        f"{', '.join(present) or 'none'})")


def _system_rows(systems, metric_names, human_names, score_of, baseline) -> list[dict]:
    """The systems table: each measure's score, CI and paired test against the baseline."""
    from ..meta.systems import significance_mark

    out = []
    for s in systems:
        cells = []
        for m in metric_names + human_names:
            r = score_of[(m, s)]
            p = r.get("p")
            cells.append({"score": finite(r["score"]), "low": finite(r["ci_low"]),
                          "high": finite(r["ci_high"]), "p": finite(p),
                          "mark": r.get("mark", significance_mark(p)),
                          "delta": finite(r.get("delta")), "n_paired": r.get("n_paired")})
        n = next((score_of[(m, s)]["n"] for m in metric_names), None)
        out.append({"system": s, "n": n, "cells": cells, "baseline": s == baseline})
    return out


def _item_level(rows, q, values, metric_names, s: ReportSettings, corr_rows, scatter, disagreements) -> None:
    """Quality `q` at the per-item levels (turn, and dialogue when it applies): correlations
    with Williams' marks, turn-level scatter data and the most disagreeing samples."""
    from ..meta.correlation import correlation, level_points
    from ..meta.evaluate import DIALOGUE_ID, correlation_rows
    from ..meta.significance import williams_test
    from ..meta.systems import human_value

    sys_list = [r.get("system") for r in rows]
    dialogues = [(r.get("meta") or {}).get(DIALOGUE_ID) for r in rows]
    levels = _levels(rows)
    human = np.array([human_value(r, q) for r in rows])
    crows = correlation_rows(values, human, quality=q, levels=levels, methods=CORR_METHODS,
                             dialogues=dialogues, systems=sys_list, n_boot=s.n_boot,
                             seed=s.corr_seed)
    for level in levels:
        for method in CORR_METHODS:
            got = {c["metric"]: c for c in crows if c["level"] == level and c["method"] == method}
            beaten = {m: [] for m in got}
            if method in WILLIAMS_METHODS and len(got) > 1:
                def beats(a, b, method=method, level=level):
                    ok = np.isfinite(values[a]) & np.isfinite(values[b]) & np.isfinite(human)
                    xa, y, _ = level_points(np.where(ok, values[a], np.nan), human, level,
                                            dialogues=dialogues, systems=sys_list)
                    xb, _, _ = level_points(np.where(ok, values[b], np.nan), human, level,
                                            dialogues=dialogues, systems=sys_list)
                    ra, rb = correlation(xa, y, method)[0], correlation(xb, y, method)[0]
                    rab = correlation(xa, xb, method)[0]
                    return williams_test(ra, rb, rab, len(y))[1]
                beaten = _top_group({m: got[m]["r"] for m in got}, beats)
            for m, c in got.items():
                corr_rows.append(_corr_row(q, level, method, m, c["r"], c["p"], c["ci_low"],
                                           c["ci_high"], c["n"], beaten.get(m),
                                           method in WILLIAMS_METHODS and len(got) > 1))
    for m in metric_names:
        r = next((c["r"] for c in crows if c["metric"] == m and c["level"] == "turn"
                  and c["method"] == "pearson"), math.nan)
        scatter.append(Scatter("turn", m, q, values[m], human, [str(x) for x in sys_list], r,
                               seed=s.corr_seed))
        disagreements.append({"metric": m, "quality": q,
                              "items": _disagreements(rows, values[m], human, q, s.top_k)})


def _system_level(h, cmp, score_of, systems, metric_names, corr_rows, scatter, caveats) -> None:
    """Human measure `h` at system level: corpus scores against the human system scores;
    descriptive only (r, no p, CI or mark, a caveat above the table) below
    `meta.system_level.MIN_SYSTEMS` systems."""
    from ..meta.correlation import correlation
    from ..meta.significance import williams_test
    from ..meta.system_level import descriptive_reason

    q = h.split(":", 1)[1]
    got_all = [r for r in cmp["rank_agreement"] if r["human"] == h]
    for method in CORR_METHODS:
        got = {r["metric"]: r for r in got_all if r["method"] == method}
        beaten = {m: [] for m in got}
        if method in WILLIAMS_METHODS and len(got) > 1:
            y = np.array([score_of[(h, s)]["score"] for s in systems], float)

            def beats(a, b, y=y, method=method):
                xa = np.array([score_of[(a, s)]["score"] for s in systems], float)
                xb = np.array([score_of[(b, s)]["score"] for s in systems], float)
                ok = np.isfinite(xa) & np.isfinite(xb) & np.isfinite(y)
                ra = correlation(xa[ok], y[ok], method)[0]
                rb = correlation(xb[ok], y[ok], method)[0]
                rab = correlation(xa[ok], xb[ok], method)[0]
                return williams_test(ra, rb, rab, int(ok.sum()))[1]
            beaten = _top_group({m: got[m]["r"] for m in got}, beats)
        for m, c in got.items():
            why = descriptive_reason(c["n_systems"])   # too few systems: r only
            if why:
                caveats.append(why)
            corr_rows.append(_corr_row(q, "system", method, m, c["r"],
                                       *((None,) * 3 if why else (c["p"], c["ci_low"], c["ci_high"])),
                                       c["n_systems"], beaten.get(m),
                                       not why and method in WILLIAMS_METHODS and len(got) > 1))
    for m in metric_names:
        r = next((c["r"] for c in got_all if c["metric"] == m and c["method"] == "pearson"), math.nan)
        xs = [score_of[(m, s)] for s in systems]
        ys = [score_of[(h, s)] for s in systems]
        scatter.append(Scatter("system", m, q, [v["score"] for v in xs], [v["score"] for v in ys],
                               systems, r, x_ci=[(v["ci_low"], v["ci_high"]) for v in xs],
                               y_ci=[(v["ci_low"], v["ci_high"]) for v in ys]))


def _levels(rows: Sequence[dict]) -> list[str]:
    """Per-item levels for correlations: turn, and dialogue when every row has a dialogue id and
    some system has several turns in one dialogue (a dialogue point is one system's turns in one
    dialogue: systems answering the same dialogue are separate points)."""
    from ..meta.evaluate import DIALOGUE_ID

    levels = ["turn"]
    ids = [(r.get("meta") or {}).get(DIALOGUE_ID) for r in rows]
    if all(i is not None for i in ids):
        groups = {(r.get("system"), i) for i, r in zip(ids, rows)}
        if len(groups) < len(rows):
            levels.append("dialogue")
    return levels


def _top_group(r_by_metric: dict[str, float], beats) -> dict[str, list[str]]:
    """For each metric, the metrics that beat it significantly (Williams, one-sided p < .05)."""
    out = {m: [] for m in r_by_metric}
    names = [m for m in r_by_metric if math.isfinite(r_by_metric[m])]
    for a in names:
        for b in names:
            if a != b and r_by_metric[a] > r_by_metric[b]:
                p = beats(a, b)
                if p is not None and math.isfinite(p) and p < 0.05:
                    out[b].append(a)
    return out


def _num(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _corr_row(quality, level, method, metric, r, p, low, high, n, beaten, tested) -> dict:
    beaten = beaten or []
    return {"quality": quality, "level": level, "method": method, "metric": metric,
            "r": finite(r), "p": finite(p), "low": finite(low), "high": finite(high), "n": n,
            "top": tested and not beaten and finite(r) is not None, "beaten_by": beaten,
            "tested": tested}


def _ranks(v: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    out = np.full(len(v), np.nan)
    ok = np.isfinite(v)
    if ok.sum() > 1:
        out[ok] = (rankdata(v[ok]) - 1) / (ok.sum() - 1)
    return out


SHOWN_DIGITS = 4   # the report prints a metric's value with 4 decimals (`html._fmt_num`)


def _disagreements(rows, metric: np.ndarray, human: np.ndarray, quality: str, k: int) -> list[dict]:
    """The `k` items whose metric percentile rank is furthest from their human percentile rank.
    The metric is ranked as printed (`SHOWN_DIGITS` decimals): sentence BLEU's smoothing floors
    (1e-9, 3e-7, ...) all print 0.0000, and ranking them apart put rows the reader sees as tied
    at the top of the list as the metric's strongest disagreements."""
    pm, ph = _ranks(np.round(metric, SHOWN_DIGITS)), _ranks(human)
    gap = np.abs(pm - ph)
    ok = np.isfinite(gap)
    order = sorted(np.flatnonzero(ok), key=lambda i: (-gap[i], i))[:k]
    out = []
    for i in order:
        r = rows[i]
        out.append({"id": r.get("id"), "system": r.get("system"), "context": (r.get("context") or [])[-3:],
                    "response": r.get("response"), "references": (r.get("references") or [])[:3],
                    "n_references": len(r.get("references") or []),
                    "metric": finite(metric[i]), "metric_rank": float(pm[i]),
                    "human": finite(human[i]), "human_rank": float(ph[i]),
                    "ratings": (r.get("ratings") or {}).get(quality),
                    "direction": "metric higher" if pm[i] > ph[i] else "humans higher"})
    return out


def _agreement(rows, qualities, seed) -> list[dict]:
    from ..meta.agreement import agreement, ratings_matrix

    out = []
    for q in qualities:
        m = ratings_matrix(rows, q)
        if m.shape[1] < 2:
            continue
        a = agreement(m, q, seed=seed).to_dict()
        out.append({k: (finite(v) if isinstance(v, float) else v) for k, v in a.items()})
    return out


__all__ = ["ReportSettings", "ReportAnalysis", "Scatter", "analyse", "check_qualities", "default_qualities",
           "CORR_METHODS", "WILLIAMS_METHODS"]
