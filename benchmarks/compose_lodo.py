"""The shipped `compose` (one composite, fitted for `overall`) held out one rated set at a time.

`bench_compose.py` scores each held-out quality with weights fitted for that quality. The
`compose` metric a user runs gives one number, with the weights of one quality (overall), and
on a corpus nobody rated before. So here, for every local rated set: fit on the other sets, score
the held-out set with the `overall` weights, and correlate with every quality it rates. Beside
it: each member alone, the member a user would pick from the development sets (best mean
Spearman with `overall` there), the oracle member (best on the held-out set itself, for
reference only), and `fm_abs`. Paired bootstrap over items for rule vs picked member.

    python3 benchmarks/compose_lodo.py --metrics mme_fm,mme_rm,mme_tcm,mme_em,mme_sm_nll --rules crs,consistent \\
        --cache benchmarks/out/compose_gen/scores [--data-root $DATA] [--out benchmarks/out/compose_lodo]

Scores come from bench_compose.py's cache (run it with --score-only first, same metrics).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

QUALITY = "overall"


def rules(p: float):
    from dialeval.metrics.compose.model import ComposeModel

    return {"crs": lambda: ComposeModel(method="crs", p=p),
            "consistent": lambda: ComposeModel(method="crs", p=p, consistent=True),
            "avg": lambda: ComposeModel(method="avg"),
            "ridge": lambda: ComposeModel(method="ridge"),
            "ridge_pos": lambda: ComposeModel(method="ridge", positive=True)}


def main() -> None:
    from bench_compose import SETS, scored_devsets

    from dialeval.metrics.compose.model import spearman
    from dialeval.meta.compose_eval import HeldOut, paired_mean_difference

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--rules", default="crs,consistent")
    ap.add_argument("--extra", default="fm_abs", help="single metrics shown beside (not composed)")
    ap.add_argument("--cache", default="benchmarks/out/compose_gen/scores")
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--datasets", default=",".join(SETS))
    ap.add_argument("--out", default="benchmarks/out/compose_lodo")
    ap.add_argument("--p", type=float, default=2.0)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()
    metrics = args.metrics.split(",")
    extra = [m for m in args.extra.split(",") if m]
    ns = argparse.Namespace(cache=args.cache, out=args.out, refs_mode="multi", tokenize=None,
                            datasets=args.datasets.split(","), data_root=args.data_root,
                            alias={"engagement": "engaging", "fluent": "fluency"})
    options = {}
    if any(m.startswith("mme_") for m in metrics):
        from dialeval.models.defaults import default_model_dir
        options["mme_model"] = default_model_dir("mme")
    if any(m in ("am", "fm", "fm_abs", "amfm") for m in metrics + extra):
        from dialeval.models.defaults import default_model_dir
        options["amfm_model"] = default_model_dir("amfm")
    devsets, _, _ = scored_devsets(ns, metrics + extra, options)
    makers = {k: v for k, v in rules(args.p).items() if k in args.rules.split(",")}
    held: list[HeldOut] = []
    table = []
    for k, d in enumerate(devsets):
        rest = [x for j, x in enumerate(devsets) if j != k]
        # the member a user would pick: best mean Spearman with `overall` on the development sets
        dev_r = {m: np.nanmean([spearman(x.scores[m], x.human[QUALITY]) for x in rest if QUALITY in x.human])
                 for m in metrics}
        picked = max(metrics, key=lambda m: dev_r[m] if math.isfinite(dev_r[m]) else -1)
        preds = {label: make().fit(rest, metrics).predict(d.scores, QUALITY) for label, make in makers.items()}
        preds["picked member"] = d.scores[picked]
        for m in metrics + extra:
            preds[m] = d.scores[m]
        for q in sorted(d.human):
            row = {"set": d.name, "quality": q, "picked": picked}
            for label, pred in preds.items():
                r = spearman(pred, d.human[q])
                row[label] = r
                ok = np.isfinite(pred) & np.isfinite(d.human[q])
                held.append(HeldOut(d.name, q, label, r, int(ok.sum()), False, pred, d.human[q]))
            row["oracle member"] = max((row[m] for m in metrics if math.isfinite(row[m])), default=math.nan)
            table.append(row)
    labels = list(makers) + ["picked member", "oracle member"] + metrics + extra

    def mean(label):
        return float(np.mean([r[label] if math.isfinite(r[label]) else 0.0 for r in table]))

    os.makedirs(args.out, exist_ok=True)
    lines = [f"Composite of {', '.join(metrics)} with the `{QUALITY}` weights, fitted without the held-out "
             f"set; Spearman with every quality of the held-out set ({len(table)} pairs, NaN as 0 in means).", "",
             "| held-out set | quality | " + " | ".join(labels) + " |", "|---|---|" + "---:|" * len(labels)]
    for r in table:
        lines.append(f"| {r['set']} | {r['quality']} | " + " | ".join(
            "n/a" if not math.isfinite(r[x]) else f"{r[x]:.3f}" for x in labels) + " |")
    lines.append("| **mean** | | " + " | ".join(f"**{mean(x):.3f}**" for x in labels) + " |")
    lines += ["", "picked member per held-out set: " + ", ".join(
        f"{s}: {p}" for s, p in dict((r["set"], r["picked"]) for r in table).items()), ""]
    lines += ["| A | B | mean r(A) - r(B) | 95% CI (paired bootstrap over items) | p (A <= B) | A wins |",
              "|---|---|---:|---|---:|---:|"]
    results = {"table": table, "comparisons": []}
    for a in makers:
        for b in ["picked member", "crs"] + extra:
            if a == b or b not in labels:
                continue
            diff = paired_mean_difference(held, a, b, n_boot=args.n_boot, seed=0)
            dd = diff.to_dict()
            results["comparisons"].append(dd)
            lines.append(f"| {a} | {b} | {dd['mean_diff']:+.4f} | [{dd['ci_low']:+.4f}, {dd['ci_high']:+.4f}] | "
                         f"{dd['p']} | {dd['wins']} |")
    # per held-out set: is the rule below the picked member by more than noise? (the paired
    # bootstrap over that set's items, its qualities together)
    lines += ["", "Per held-out set, rule minus picked member (mean over the set's qualities; 95% CI from "
              "the paired bootstrap over its items; **below** marks a CI wholly under 0):", "",
              "| held-out set | " + " | ".join(makers) + " |", "|---|" + "---|" * len(makers)]
    results["per_set"] = {}
    for name in dict.fromkeys(r["set"] for r in table):
        cells = []
        for a in makers:
            dd = paired_mean_difference([h for h in held if h.set == name], a, "picked member",
                                        n_boot=args.n_boot, seed=0).to_dict()
            results["per_set"].setdefault(name, {})[a] = dd
            below = dd["ci_high"] < 0
            cells.append(f"{'**below** ' if below else ''}{dd['mean_diff']:+.3f} [{dd['ci_low']:+.3f}, {dd['ci_high']:+.3f}]")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "lodo.md"), "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    with open(os.path.join(args.out, "lodo.json"), "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1, default=float)


if __name__ == "__main__":
    main()
