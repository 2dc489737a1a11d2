"""A self-contained HTML report of a scored set: one file a person can send to a colleague.

Everything is inlined: the style, a small sorting script, and the figures as SVG text. A
Content-Security-Policy in the page forbids every network source (`default-src 'none'`), so
opening it can fetch nothing, and a browser reports any attempt as a console error (the
browser test checks there is none). The same input gives the same bytes: no timestamps, seeded
bootstrap and jitter, SVG ids from a fixed salt.

`build_report` gathers the numbers (from `meta/`: system comparison, correlations, Williams'
test, agreement); `render_html` lays them out with the Jinja2 template
`templates/report.html.j2`. Sections: run (signatures, input sha256, version), systems (corpus
scores with CIs and paired significance against a baseline), metric-human correlation (with
CIs and Williams marks at every level that applies), metric-metric heatmap, scatter plots,
human agreement, and the samples where metric and humans disagree most.
"""

from __future__ import annotations

import hashlib
import math
import os
from typing import Any, Sequence

import numpy as np

from ..version import __version__

SECTIONS = ("run", "systems", "correlation", "heatmap", "scatter", "agreement", "disagreement")
CORR_METHODS = ("pearson", "spearman", "kendall")
WILLIAMS_METHODS = ("pearson", "spearman")


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def default_qualities(rows: Sequence[dict]) -> list[str]:
    """`overall` when rated, else every rated quality (in first-seen order)."""
    found = list(dict.fromkeys(q for r in rows for q in (r.get("ratings") or {})))
    return ["overall"] if "overall" in found else found


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


def build_report(rows: Sequence[dict], *, qualities: Sequence[str] | None = None,
                 system_human: dict[str, dict[str, float]] | None = None,
                 signatures: dict[str, str] | None = None, inputs: dict[str, str] | None = None,
                 title: str = "dialeval report", metrics: Sequence[str] | None = None,
                 baseline: str | None = None, test: str = "bs", n_resamples: int | None = None,
                 seed: int = 12345, n_boot: int = 1000, corr_seed: int = 0, top_k: int = 5,
                 comparison=None, pair_by: str = "auto") -> dict:
    """Every number and figure of the report, as plain data (see `render_html`).

    `rows`: score rows (`dialeval score --with-stats -o`, or `meta.systems.score_rows`).
    `qualities`: rated qualities to analyse (default: `overall`, or all). `system_human`: published
    system means for sets without per-item ratings. `inputs`: label -> sha256 of input files.
    """
    from ..meta.systems import compare_systems, human_value, significance_mark
    from ..meta.correlation import correlation, level_points
    from ..meta.evaluate import DIALOGUE_ID, correlation_rows
    from ..meta.matrix import correlation_matrix
    from ..meta.significance import williams_test
    from . import figures

    from ..meta.systems import row_signatures

    rows = list(rows)
    signatures = {**row_signatures(rows), **(signatures or {})}
    if qualities is None:
        qualities = default_qualities(rows)
    item_qualities = [q for q in qualities
                      if any(math.isfinite(human_value(r, q)) for r in rows)]
    systems_all = list(dict.fromkeys(r.get("system") if r.get("system") is not None else "all"
                                     for r in rows))
    if baseline is None and len(systems_all) > 1:
        baseline = systems_all[0]
    if comparison is None:
        comparison = compare_systems(rows, metrics=metrics, humans=item_qualities,
                                     system_human=system_human, baseline=baseline, test=test,
                                     n_resamples=n_resamples, seed=seed, signatures=signatures,
                                     rank_methods=CORR_METHODS, pair_by=pair_by)
    cmp = comparison.to_dict()
    metric_names = [m for m in cmp["measures"] if not m.startswith("human:")]
    human_names = [m for m in cmp["measures"] if m.startswith("human:")]
    systems = cmp["systems"]
    colours = figures.system_colours(systems)
    score_of = {(r["measure"], r["system"]): r for r in cmp["scores"]}

    # -- systems table ------------------------------------------------------------------------
    system_rows = []
    for s in systems:
        cells = []
        for m in metric_names + human_names:
            r = score_of[(m, s)]
            p = r.get("p")
            cells.append({"score": _finite(r["score"]), "low": _finite(r["ci_low"]),
                          "high": _finite(r["ci_high"]), "p": _finite(p),
                          "mark": r.get("mark", significance_mark(p)),
                          "delta": _finite(r.get("delta")), "n_paired": r.get("n_paired")})
        n = next((score_of[(m, s)]["n"] for m in metric_names), None)
        system_rows.append({"system": s, "n": n, "cells": cells, "baseline": s == baseline})

    # -- correlations ---------------------------------------------------------------------------
    values = {m: np.array([_num(r["scores"].get(m)) for r in rows]) for m in metric_names}
    sys_list = [r.get("system") for r in rows]
    dialogues = [(r.get("meta") or {}).get(DIALOGUE_ID) for r in rows]
    levels = _levels(rows)
    corr_rows: list[dict] = []
    scatter: list[dict] = []
    disagreements: list[dict] = []
    for q in item_qualities:
        human = np.array([human_value(r, q) for r in rows])
        crows = correlation_rows(values, human, quality=q, levels=levels, methods=CORR_METHODS,
                                 dialogues=dialogues, systems=sys_list, n_boot=n_boot,
                                 seed=corr_seed)
        for level in levels:
            for method in CORR_METHODS:
                got = {c["metric"]: c for c in crows if c["level"] == level and c["method"] == method}
                beaten = {m: [] for m in got}
                if method in WILLIAMS_METHODS and len(got) > 1:
                    def beats(a, b, method=method):
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
        # turn-level scatter plots and disagreements
        for m in metric_names:
            r = next((c["r"] for c in crows if c["metric"] == m and c["level"] == "turn"
                      and c["method"] == "pearson"), math.nan)
            scatter.append({"metric": m, "quality": q, "level": "turn",
                            "svg": figures.turn_scatter(values[m], human, [str(s) for s in sys_list],
                                                        metric=m, quality=q, colours=colours, r=r,
                                                        seed=corr_seed)})
            disagreements.append({"metric": m, "quality": q,
                                  "items": _disagreements(rows, values[m], human, q, top_k)})
    # system level: corpus scores against the human system scores; descriptive only (r, no p,
    # CI or mark, a caveat above the table) below system_level.MIN_SYSTEMS systems
    from ..meta.system_level import descriptive_reason

    caveats: list[str] = []
    if len(systems) >= 3:
        for h in human_names:
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
                                               *((None,) * 3 if why else
                                                 (c["p"], c["ci_low"], c["ci_high"])),
                                               c["n_systems"], beaten.get(m),
                                               not why and method in WILLIAMS_METHODS and len(got) > 1))
            for m in metric_names:
                r = next((c["r"] for c in got_all if c["metric"] == m and c["method"] == "pearson"),
                         math.nan)
                xs = [score_of[(m, s)] for s in systems]
                ys = [score_of[(h, s)] for s in systems]
                scatter.append({"metric": m, "quality": q, "level": "system",
                                "svg": figures.system_scatter(
                                    [v["score"] for v in xs], [v["score"] for v in ys], systems,
                                    metric=m, quality=q, colours=colours, r=r,
                                    x_ci=[(v["ci_low"], v["ci_high"]) for v in xs],
                                    y_ci=[(v["ci_low"], v["ci_high"]) for v in ys])})

    # -- heatmap ----------------------------------------------------------------------------------
    heatmap_svg = None
    if len(metric_names) > 1:
        matrix = correlation_matrix(values, "spearman")
        heatmap_svg = figures.heatmap(matrix, metric_names,
                                      title="Spearman between metrics (turn level)")

    # -- agreement ----------------------------------------------------------------------------------
    agreement_rows = _agreement(rows, item_qualities, corr_seed)

    return {
        "title": title, "version": __version__, "sections": list(SECTIONS),
        "inputs": [{"name": k, "sha256": v} for k, v in (inputs or {}).items()],
        "signatures": [{"metric": m, "signature": signatures.get(m) or
                        cmp["measures"][m].get("signature") or "(not recorded in the input)"}
                       for m in metric_names],
        "human_signatures": [{"name": h, "signature": cmp["measures"][h]["signature"]}
                             for h in human_names],
        "compare_signature": cmp["signature"], "test": cmp["test"],
        "n_resamples": cmp["n_resamples"], "seed": cmp["seed"], "baseline": baseline,
        "corr": {"n_boot": n_boot, "seed": corr_seed,
                 "levels": list(dict.fromkeys(c["level"] for c in corr_rows)),
                 "caveats": list(dict.fromkeys(caveats)),
                 "fixed_human": any(cmp["measures"][h]["kind"] == "published-system-means"
                                    for h in human_names)},
        "measures": [{"name": m, "kind": cmp["measures"][m]["kind"]} for m in metric_names + human_names],
        "system_rows": system_rows, "notes": cmp["notes"],
        "warnings": list(getattr(comparison, "warnings", [])),
        "remarks": list(getattr(comparison, "remarks", [])) + list(dict.fromkeys(caveats)),
        "correlations": corr_rows, "heatmap_svg": heatmap_svg, "scatter": scatter,
        "agreement": agreement_rows, "disagreements": disagreements,
        "n_rows": len(rows), "n_systems": len(systems),
    }


def _num(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _corr_row(quality, level, method, metric, r, p, low, high, n, beaten, tested) -> dict:
    beaten = beaten or []
    return {"quality": quality, "level": level, "method": method, "metric": metric,
            "r": _finite(r), "p": _finite(p), "low": _finite(low), "high": _finite(high), "n": n,
            "top": tested and not beaten and _finite(r) is not None, "beaten_by": beaten,
            "tested": tested}


def _ranks(v: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    out = np.full(len(v), np.nan)
    ok = np.isfinite(v)
    if ok.sum() > 1:
        out[ok] = (rankdata(v[ok]) - 1) / (ok.sum() - 1)
    return out


def _disagreements(rows, metric: np.ndarray, human: np.ndarray, quality: str, k: int) -> list[dict]:
    """The `k` items whose metric percentile rank is furthest from their human percentile rank."""
    pm, ph = _ranks(metric), _ranks(human)
    gap = np.abs(pm - ph)
    ok = np.isfinite(gap)
    order = sorted(np.flatnonzero(ok), key=lambda i: (-gap[i], i))[:k]
    out = []
    for i in order:
        r = rows[i]
        out.append({"id": r.get("id"), "system": r.get("system"), "context": (r.get("context") or [])[-3:],
                    "response": r.get("response"), "references": (r.get("references") or [])[:3],
                    "n_references": len(r.get("references") or []),
                    "metric": _finite(metric[i]), "metric_rank": float(pm[i]),
                    "human": _finite(human[i]), "human_rank": float(ph[i]),
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
        out.append({k: (_finite(v) if isinstance(v, float) else v) for k, v in a.items()})
    return out


def render_html(report: dict) -> str:
    """The report as one HTML document (Jinja2, autoescaped; SVG figures inlined)."""
    from ..optional import require

    jinja2 = require("jinja2", "the HTML report", "report")

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(here), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["num"] = _fmt_num
    env.filters["pval"] = _fmt_p
    env.filters["sortkey"] = lambda v: "" if v is None else repr(float(v))
    with open(os.path.join(here, "report.css"), encoding="utf-8") as f:
        css = f.read()
    with open(os.path.join(here, "sort.js"), encoding="utf-8") as f:
        js = f.read()
    page = env.get_template("report.html.j2").render(r=report, css=css, js=js)
    page = _with_caveats(page, report["corr"].get("caveats") or [])
    if report.get("probes"):   # `report --probes` (report/probes.py `attach`): before the script,
        from .probes import probe_section   # which makes the tables above it sortable

        at = page.rfind("<script>")
        page = page[:at] + probe_section(report["probes"]) + "\n" + page[at:]
    return page


def _with_caveats(page: str, caveats: Sequence[str]) -> str:
    """The system level's caveats (too few systems: descriptive only) as a paragraph of the
    correlation section, just above its table."""
    if not caveats:
        return page
    import html as _html

    at = page.find('<table class="sortable" id="table-correlation">')
    if at < 0:
        return page
    text = " ".join(_html.escape(c[0].upper() + c[1:] + ".") for c in caveats)
    return (page[:at] + f'<p class="note caveat" id="system-level-caveat"><b>Caveat:</b> {text}</p>\n'
            + page[at:])


def _fmt_num(v: Any, digits: int = 4) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _fmt_p(v: Any) -> str:
    from .tables import P_FLOOR

    if v is None:
        return "n/a"
    if v < P_FLOOR:   # 0 or below resolution: a bound, never 0.0e+00
        return f"< {P_FLOOR:.1e}"
    return f"{v:.4f}" if v >= 1e-4 else f"{v:.1e}"


def write_report(path: str | os.PathLike, report: dict) -> None:
    from ..data.writers import atomic_write

    with atomic_write(path) as handle:
        handle.write(render_html(report))


__all__ = ["build_report", "render_html", "write_report", "sha256_file", "SECTIONS"]
