"""Correlation Re-Scaling (MME-CRS) against MME-Avg and ridge, leave one rated data set out.

For every local rated set, the composition is fitted on all the other sets and tested on the
held-out one, per quality (Spearman). Reported: per (set, quality) r of CRS (p = 2), Avg and
ridge; the mean difference CRS - Avg with a paired bootstrap (the paper: +3.49 points on the
DSTC10 test sets); the p sweep (the paper's Table 4: p = 1, 2, 3); the ablation (the paper's
Table 5: drop each metric group); a heatmap of the CRS weights fitted on all sets; and each
metric's own Spearman per (set, quality) for context.

    python3 benchmarks/bench_compose.py --metrics bleu2,rouge_l,meteor,emb_average,sent_cosine \\
        [--amfm-model DIR] [--lm-model DIR] [--mme-model DIR] [--groups NAME=m1+m2,...] \\
        [--data-root ../shared/data] [--out benchmarks/out/compose_results] [--n-boot 1000]

Every metric flag of `dialeval score` is accepted (they are generated the same way). Metric
scores are cached per data set in OUT/scores/<set>.jsonl, keyed by each metric's signature, so
a rerun with one more metric scores only that one. The sets' quality names differ; synonyms
are merged with `--alias` (default engagement=engaging, fluent=fluency) and the merge is
printed. USR's "Original Ground Truth" responses are dropped (they are the references).

Outputs: OUT/results.json (every number), OUT/results.md (the tables), OUT/crs_weights.png.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from dialeval.cli.options import add_scoring_flags, metric_options
from dialeval.data.datasets import get_spec, load_dataset
from dialeval.data.writers import atomic_write, json_value, write_json
from dialeval.report.tables import format_table
from dialeval.metrics.compose.model import POOLED, ComposeModel, DevSet, spearman
from dialeval.meta.compose_eval import leave_one_set_out, mean_r, paired_mean_difference
from dialeval.metrics.registry import REGISTRY, build_metric
from dialeval.scoring import score

# the local rated sets the studies hold out one at a time: name -> folder under the data root
# (the data-set registry's)
SETS = {name: get_spec(name).folder for name in (
    "usr-pc", "usr-tc", "fed-turn", "grade-dailydialog", "grade-convai2", "grade-empatheticdialogues", "gupta",
    "holistic-coherence", "holistic-fluency", "predictive-engagement")}
EXCLUDE = {"usr-pc": ("Original Ground Truth",), "usr-tc": ("Original Ground Truth",)}
# MME's five groups (the paper's Table 5), used when the metrics are the mme_* ones
MME_GROUPS = {"FM": ["mme_fm"], "RM": ["mme_rm"], "TCM": ["mme_tcm"], "EM": ["mme_em"],
              "SM": ["mme_sm_nll", "mme_sm_nce", "mme_sm_ppl"], "RM+TCM": ["mme_rm", "mme_tcm"]}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_groups(text: str | None, metrics: list[str]) -> dict[str, list[str]]:
    if text:
        groups = {}
        for part in text.split(","):
            name, _, members = part.partition("=")
            groups[name.strip()] = [m for m in members.split("+") if m]
        return groups
    if any(m.startswith("mme_") for m in metrics):
        groups = {g: [m for m in ms if m in metrics] for g, ms in MME_GROUPS.items()}
        groups = {g: ms for g, ms in groups.items() if ms}
        rest = [m for m in metrics if not any(m in ms for ms in groups.values())]
        groups.update({m: [m] for m in rest})
        return groups
    groups: dict[str, list[str]] = {}
    for m in metrics:
        groups.setdefault(REGISTRY[m].family, []).append(m)
    if len(groups) < len(metrics):          # also drop each metric alone
        groups.update({m: [m] for m in metrics if len(groups.get(REGISTRY[m].family, [])) > 1})
    return groups


def read_cache(path: str, ids: list[str]) -> dict:
    """Cached scores of one set: a header line {"set", "signatures"}, then {"id", "scores"} per
    sample. A cache for other sample ids is ignored."""
    cache: dict = {"signatures": {}, "scores": {}}
    if not os.path.exists(path):
        return cache
    with open(path, encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    if [row["id"] for row in lines[1:]] != ids:
        return cache
    cache["signatures"] = lines[0]["signatures"]
    cache["scores"] = {m: [row["scores"].get(m) for row in lines[1:]] for m in cache["signatures"]}
    return cache


def write_cache(path: str, name: str, ids: list[str], cache: dict) -> None:
    with atomic_write(path) as handle:
        handle.write(json.dumps({"set": name, "signatures": cache["signatures"]}) + "\n")
        for i, sid in enumerate(ids):
            handle.write(json.dumps({"id": sid, "scores": {m: col[i] for m, col in cache["scores"].items()}})
                         + "\n")


def scored_devsets(args, metrics: list[str], options: dict) -> tuple[list[DevSet], dict, dict]:
    """DevSets of every local set, scoring only metrics whose cached signature differs."""
    cache_dir = args.cache or os.path.join(args.out, "scores")
    os.makedirs(cache_dir, exist_ok=True)
    built = {m: build_metric(m, refs_mode=args.refs_mode, tokenizer=args.tokenize, **options)
             for m in metrics}
    signatures = {m: str(b.signature()) for m, b in built.items()}
    timings: dict[str, dict[str, float]] = {}
    devsets = []
    for name in args.datasets:
        dataset = load_dataset(name, os.path.join(args.data_root, SETS[name]))
        samples = [s for s in dataset.samples if s.system not in EXCLUDE.get(name, ())]
        ids = [s.id for s in samples]
        path = os.path.join(cache_dir, f"{name}.jsonl")
        cache = read_cache(path, ids)
        todo = [m for m in metrics if cache["signatures"].get(m) != signatures[m]]
        for m in todo:
            log(f"scoring {name} ({len(samples)}) with {m}")
            t0 = time.perf_counter()
            result = score(samples, [built[m]], progress=False)
            timings.setdefault(name, {})[m] = time.perf_counter() - t0
            cache["scores"][m] = [None if not math.isfinite(v) else float(v) for v in result.sentence[m]]
            cache["signatures"][m] = signatures[m]
            write_cache(path, name, ids, cache)
        cols = {m: np.array([np.nan if v is None else v for v in cache["scores"][m]]) for m in metrics}
        dev = DevSet.from_samples(name, samples, cols)
        dev.human = {args.alias.get(q, q): v for q, v in dev.human.items()}
        devsets.append(dev)
    return devsets, signatures, timings


def crs(p: float, scaling: str):
    return lambda: ComposeModel(method="crs", p=p, scaling=scaling)


def table_md(header, rows, digits=4) -> str:
    return format_table(header, rows, fmt="markdown", digits=digits)


def zero(v: float) -> float:
    """A composition that could not score a pair counts as r = 0 there (as in mean_r)."""
    return v if math.isfinite(v) else 0.0


def pct(v: float) -> str:
    return "n/a" if not math.isfinite(v) else f"{100 * v:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metrics", required=True, help="comma-separated metrics to compose")
    ap.add_argument("--data-root", default=os.environ.get("DIALEVAL_SHARED_DATA", "../shared/data"))
    ap.add_argument("--datasets", default=",".join(SETS), help="comma-separated subset of the rated sets")
    ap.add_argument("--out", default="benchmarks/out/compose_results")
    ap.add_argument("--cache", help="score cache folder (default OUT/scores)")
    ap.add_argument("--groups", help="ablation groups NAME=m1+m2,... (default: MME's five for mme_*, "
                    "else metric families and single metrics)")
    ap.add_argument("--alias", default="engagement=engaging,fluent=fluency",
                    help="quality synonyms merged across sets, FROM=TO,... ('' for none)")
    ap.add_argument("--scaling", default="minmax", choices=["minmax", "percentile", "none"])
    ap.add_argument("--ps", default="1,2,3", help="CRS powers of the p sweep")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--score-only", action="store_true", help="fill the score cache and stop")
    add_scoring_flags(ap)
    args = ap.parse_args()
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    args.alias = dict(kv.split("=", 1) for kv in args.alias.split(",") if "=" in kv)
    options = metric_options(args)
    t_start = time.perf_counter()
    devsets, signatures, timings = scored_devsets(args, metrics, options)
    if args.score_only:
        return
    results: dict = {"metrics": metrics, "signatures": signatures, "alias": args.alias,
                     "sets": {d.name: {"n": len(d), "qualities": sorted(d.human)} for d in devsets},
                     "scaling": args.scaling, "n_boot": args.n_boot, "seed": args.seed,
                     "options": options, "scoring_seconds": timings}
    md: list[str] = [f"# CRS leave-one-set-out: {', '.join(metrics)}", "",
                     f"Command: `python3 benchmarks/bench_compose.py {' '.join(sys.argv[1:])}`", "",
                     f"Quality synonyms merged: {args.alias or 'none'}; scaling {args.scaling}; "
                     f"paired bootstrap {args.n_boot} resamples, seed {args.seed}.", ""]

    # 1. each metric alone
    single = []
    for d in devsets:
        for q in sorted(d.human):
            single.append([d.name, q] + [spearman(d.scores[m], d.human[q]) for m in metrics])
    results["single"] = [dict(zip(["set", "quality"] + metrics, row)) for row in single]
    single_mean = [float(np.mean([zero(row[2 + j]) for row in single])) for j in range(len(metrics))]
    results["single_mean"] = dict(zip(metrics, single_mean))
    md += ["## Each metric alone (turn-level Spearman; no fitting)", "",
           table_md(["set", "quality"] + metrics, single + [["mean (NaN as 0)", ""] + single_mean], 3), ""]

    # 2. leave one set out: CRS (p = 2) vs Avg vs ridge
    log("leave-one-set-out: crs, avg, ridge")
    methods = {"crs": crs(2.0, args.scaling),
               "avg": lambda: ComposeModel(method="avg", scaling=args.scaling),
               "ridge": lambda: ComposeModel(method="ridge", scaling=args.scaling, seed=args.seed)}
    rows, fit_seconds = [], {}
    for label, make in methods.items():
        t0 = time.perf_counter()
        rows += leave_one_set_out(devsets, {label: make}, metrics)
        fit_seconds[label] = time.perf_counter() - t0
    results["lodo_seconds"] = fit_seconds
    results["lodo"] = [r.to_dict() for r in rows]
    table = {}
    for r in rows:
        table.setdefault((r.set, r.quality), {"fallback": False})[r.method] = r.r
        table[(r.set, r.quality)]["fallback"] |= r.fallback
    body = [[s, q + (" *" if v["fallback"] else ""), v["crs"], v["avg"], v["ridge"], v["crs"] - v["avg"]]
            for (s, q), v in sorted(table.items())]
    body.append(["mean", "", mean_r(rows, "crs"), mean_r(rows, "avg"), mean_r(rows, "ridge"),
                 mean_r(rows, "crs") - mean_r(rows, "avg")])
    comparisons = []
    for a, b, keep, label in [("crs", "avg", None, "all pairs"),
                              ("crs", "avg", lambda r: not r.fallback, "pairs with a fitted quality"),
                              ("crs", "ridge", None, "all pairs"), ("ridge", "avg", None, "all pairs")]:
        diff = paired_mean_difference(rows, a, b, n_boot=args.n_boot, seed=args.seed, keep=keep)
        comparisons.append({"which": label, **diff.to_dict()})
    results["comparisons"] = comparisons
    md += ["## Leave one set out: CRS (p = 2) vs MME-Avg vs ridge (Spearman on the held-out set)", "",
           "The paper reports CRS - Avg = +3.49 points (mean Spearman over the DSTC10 test qualities).", "",
           "`*`: no other set rates this quality; scored with the pooled weights.", "",
           table_md(["held-out set", "quality", "CRS", "Avg", "ridge", "CRS - Avg"], body), "",
           table_md(["A", "B", "pairs", "mean r(A) - r(B), points", "95% CI", "p (bootstrap, A <= B)", "A wins"],
                    [[c["a"], c["b"], f"{c['pairs']} ({c['which']})", pct(c["mean_diff"]),
                      f"[{pct(c['ci_low'])}, {pct(c['ci_high'])}]", c["p"], c["wins"]]
                     for c in comparisons]), ""]
    md += ["Time for the whole leave-one-set-out run (fit on the other sets + predict, all sets), "
           "same process: " + ", ".join(f"{k} {v:.2f} s ({v / fit_seconds['avg']:.1f}x avg)"
                                       for k, v in fit_seconds.items()), ""]
    per_q = {}
    for (s, q), v in table.items():
        per_q.setdefault(q, []).append(v)
    qrows, qdiffs = [], {}
    for q, vs in sorted(per_q.items()):
        d = paired_mean_difference(rows, "crs", "avg", n_boot=args.n_boot, seed=args.seed,
                                   keep=lambda r, q=q: r.quality == q)
        qdiffs[q] = d.to_dict()
        qrows.append([q, len(vs)] + [float(np.mean([zero(v[m]) for v in vs])) for m in ("crs", "avg", "ridge")]
                     + [pct(d.mean_diff), f"[{pct(d.ci_low)}, {pct(d.ci_high)}]", d.p])
    results["per_quality"] = [dict(zip(["quality", "sets", "crs", "avg", "ridge"], r[:5]),
                                   crs_minus_avg=qdiffs[r[0]]) for r in qrows]
    md += ["Per quality (mean over the held-out sets that rate it; CRS - Avg in points with its "
           "paired bootstrap):", "",
           table_md(["quality", "sets", "CRS", "Avg", "ridge", "CRS - Avg", "95% CI", "p (CRS <= Avg)"], qrows), ""]

    # 3. p sweep (the paper's Table 4)
    ps = [float(p) for p in args.ps.split(",")]
    log(f"p sweep {ps}")
    sweep_rows = leave_one_set_out(devsets, {f"p={p:g}": crs(p, args.scaling) for p in ps}, metrics)
    sweep = [[f"CRS p = {p:g}", pct(mean_r(sweep_rows, f"p={p:g}"))] for p in ps]
    best = max(metrics, key=lambda m: results["single_mean"][m])
    sweep += [["MME-Avg", pct(mean_r(rows, "avg"))], ["ridge", pct(mean_r(rows, "ridge"))],
              [f"best single metric, chosen on all sets ({best})", pct(results["single_mean"][best])]]
    sweep_diffs = [paired_mean_difference(sweep_rows + [r for r in rows if r.method == "avg"],
                                          f"p={p:g}", "avg", n_boot=args.n_boot, seed=args.seed).to_dict()
                   for p in ps]
    results["p_sweep"] = {"mean_r": {f"p={p:g}": mean_r(sweep_rows, f"p={p:g}") for p in ps},
                          "vs_avg": sweep_diffs, "rows": [r.to_dict() for r in sweep_rows]}
    md += ["## p sweep (mean held-out Spearman over all (set, quality) pairs, points)", "",
           table_md(["composition", "mean Spearman"], sweep), "",
           table_md(["p", "CRS - Avg", "95% CI", "p (bootstrap)"],
                    [[f"{p:g}", pct(d["mean_diff"]), f"[{pct(d['ci_low'])}, {pct(d['ci_high'])}]", d["p"]]
                     for p, d in zip(ps, sweep_diffs)]), ""]

    # 4. ablation (the paper's Table 5): drop each group, CRS p = 2
    groups = parse_groups(args.groups, metrics)
    log(f"ablation over groups {groups}")
    ablation = [["all metrics", pct(mean_r(rows, "crs")), ""]]
    results["ablation"] = {"all": mean_r(rows, "crs")}
    for g, members in groups.items():
        kept = [m for m in metrics if m not in members]
        if not kept:
            continue
        ab_rows = leave_one_set_out(devsets, {"crs": crs(2.0, args.scaling)}, kept)
        v = mean_r(ab_rows, "crs")
        results["ablation"][f"w/o {g}"] = v
        ablation.append([f"w/o {g} ({'+'.join(members)})", pct(v), pct(v - mean_r(rows, "crs"))])
    md += ["## Ablation: drop each group (CRS p = 2, leave one set out, mean Spearman, points)", "",
           table_md(["composition", "mean Spearman", "change"], ablation), ""]

    # 5. weights fitted on every set, and their heatmap
    full = ComposeModel(method="crs", p=2.0, scaling=args.scaling).fit(devsets, metrics)
    weights = [[full.weights_for(q)[m] for m in metrics] for q in full.qualities_]
    results["weights"] = {q: full.weights_for(q) for q in [*full.qualities_, POOLED]}
    results["weight_sets"] = dict(zip([*full.qualities_, POOLED], full.weight_sets_))
    results["scale"] = {"low": dict(zip(metrics, full.scale_low_.tolist())),
                        "high": dict(zip(metrics, full.scale_high_.tolist()))}
    png = os.path.join(args.out, "crs_weights.png")
    try:
        from dialeval.report.weights import weights_heatmap

        labels = [q + (" (pooled)" if full.fallback_used(q) else "") for q in full.qualities_]
        weights_heatmap(weights, labels, metrics, png,
                        title="CRS weights (p = 2), fitted on every local rated set")
        results["heatmap"] = os.path.relpath(png)
    except ImportError as exc:
        log(f"no heatmap: {exc}")
    md += ["## CRS weights (p = 2) fitted on all sets", "",
           table_md(["quality", "sets"] + metrics,
                    [[q, full.weight_sets_[i]] + w for i, (q, w) in enumerate(zip(full.qualities_, weights))], 3),
           "", "sets: (set, quality) pairs averaged (eq. 2); 0: none had a positive correlation, "
           "the pooled weights stand in.", "", f"![CRS weights]({os.path.basename(png)})", ""]
    results["seconds_total"] = time.perf_counter() - t_start
    write_json(os.path.join(args.out, "results.json"), json_value(results))
    with atomic_write(os.path.join(args.out, "results.md")) as handle:
        handle.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
