"""Two MME model folders in one leave-one-set-out comparison: CRS (p = 2) and MME-Avg over the
same seven sub-metrics, fitted on the other rated sets and tested on the held-out one, for each
folder; then a paired bootstrap of the mean held-out Spearman difference between the folders
(the same items resampled for both in every round, as `bench_compose.py` compares methods).

It reads the score caches that `bench_compose.py` wrote for each folder (keyed by signature;
a metric whose signature is not cached is scored first), so run that for both folders first:

    export PYTHONPATH=src OMP_NUM_THREADS=1
    python3 benchmarks/compare_mme_variants.py \\
        --a finetune=models/mme-finetune:benchmarks/out/compose_results_mme_finetune/scores \\
        --b frozen=models/mme-default:benchmarks/out/compose_results_mme/scores \\
        --data-root ../shared/data --out benchmarks/out/compose_results_mme_finetune/vs_frozen.md
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
METRICS = ["mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll", "mme_sm_nce", "mme_sm_ppl"]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_compose", os.path.join(HERE, "bench_compose.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _variant(text: str) -> tuple[str, str, str]:
    label, rest = text.split("=", 1)
    model, cache = rest.split(":", 1)
    return label, model, cache


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="LABEL=MODEL_DIR:SCORE_CACHE_DIR (the variant tested)")
    ap.add_argument("--b", required=True, help="LABEL=MODEL_DIR:SCORE_CACHE_DIR (the baseline)")
    ap.add_argument("--data-root", default="../shared/data")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="markdown file to write")
    args = ap.parse_args()
    bench = _bench()
    from dialeval.cli.options import add_scoring_flags, metric_options
    from dialeval.meta.compose_eval import leave_one_set_out, mean_r, paired_mean_difference

    rows = []
    labels = []
    for text in (args.a, args.b):
        label, model, cache = _variant(text)
        labels.append(label)
        sub = argparse.ArgumentParser()
        add_scoring_flags(sub)
        ns = sub.parse_args(["--mme-model", model])
        ns.cache, ns.out, ns.data_root = cache, os.path.dirname(cache), args.data_root
        ns.datasets = list(bench.SETS)
        ns.alias = {"engagement": "engaging", "fluent": "fluency"}
        devsets, _, _ = bench.scored_devsets(ns, METRICS, metric_options(ns))
        for row in leave_one_set_out(devsets, {f"crs@{label}": bench.crs(2.0, "minmax"),
                                               f"avg@{label}": lambda: bench.ComposeModel(method="avg",
                                                                                          scaling="minmax")},
                                     METRICS):
            rows.append(row)
    a, b = labels
    lines = [f"# Leave one set out: MME `{a}` against `{b}` (same seven sub-metrics, same sets)", "",
             f"Command: `python3 benchmarks/compare_mme_variants.py {' '.join(sys.argv[1:])}`", "",
             f"Paired bootstrap {args.n_boot} resamples, seed {args.seed}; a pair the composition cannot score "
             "counts as r = 0 in the means.", "",
             "| composition | mean held-out Spearman, points |", "|---|---:|"]
    for method in (f"crs@{a}", f"crs@{b}", f"avg@{a}", f"avg@{b}"):
        lines.append(f"| {method} | {100 * mean_r(rows, method):.2f} |")
    lines += ["", "| A | B | pairs | mean r(A) - r(B), points | 95% CI | p (A <= B) | A wins |",
              "|---|---|---:|---:|---|---:|---:|"]
    for x, y in ((f"crs@{a}", f"crs@{b}"), (f"avg@{a}", f"avg@{b}"), (f"crs@{a}", f"avg@{a}"),
                 (f"crs@{b}", f"avg@{b}")):
        d = paired_mean_difference(rows, x, y, n_boot=args.n_boot, seed=args.seed)
        lines.append(f"| {x} | {y} | {d.pairs} | {100 * d.mean_diff:.2f} | "
                     f"[{100 * d.ci_low:.2f}, {100 * d.ci_high:.2f}] | {d.p:.4f} | {d.wins} |")
    by = {(r.set, r.quality, r.method): r.r for r in rows}
    lines += ["", f"| held-out set | quality | crs@{a} | crs@{b} | diff |", "|---|---|---:|---:|---:|"]
    for s, q in sorted({(r.set, r.quality) for r in rows}):
        ra, rb = by.get((s, q, f"crs@{a}"), np.nan), by.get((s, q, f"crs@{b}"), np.nan)
        lines.append(f"| {s} | {q} | {ra:.4f} | {rb:.4f} | {ra - rb:+.4f} |")
    with open(args.out, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines[:20]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
