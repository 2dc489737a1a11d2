"""Every shipped default on every local rated set it did not learn from, side by side.

One table a user can read before reaching for a learned metric: turn-level Spearman with the
set's main quality (overall where rated, else the one quality it rates), 95% bootstrap CI over
items, for

- the defaults trained on no rated set (mme_*, lm_coherence, lm_fluency, am, fm, amfm): every
  set is unseen, so they are scored as they ship;
- `compose` and `compose_ref`: fitted as their recipes fit them (ridge >= 0, `overall` weights)
  on the other sets, then scored on the held-out one (compose_ref only on the sets with
  references, fitted only on those);
- `adem`, `c_adem`, `r_adem`: the leave-one-dataset-out predictions of `bench_adem_lodo.py`
  (trained on six sets with references, scored on the seventh), read from its output folder;
- beside them `sent_cosine`, `bertscore_f` and `fm_abs` (untrained baselines).

    python3 benchmarks/defaults_lodo.py --data-root $DATA [--cache benchmarks/out/compose_gen/scores]

Scores come from bench_compose.py's cache (metrics missing from it are scored and cached first).
Writes OUT/defaults_lodo.md and .json.
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

MME = ["mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll"]
BASELINES = ["sent_cosine", "bertscore_f", "fm_abs"]
UNTRAINED = MME + ["lm_coherence", "lm_fluency", "am", "fm", "amfm"]
COMPOSED = {"compose": MME, "compose_ref": MME + ["sent_cosine", "bertscore_f"]}
ADEM = {"adem": "minilm__cos_std_rank_search", "c_adem": "minilm__c_adem:cos_std_rank_search",
        "r_adem": "minilm__r_adem:cos_std_rank_search"}
ADEM_OLD = {"c_adem": "minilm__c_adem:old_search", "r_adem": "minilm__r_adem:old_search"}


def main_quality(human: dict) -> str:
    return "overall" if "overall" in human else sorted(human)[0]


def has_refs(d, metric: str = "sent_cosine") -> bool:
    return bool(np.isfinite(d.scores[metric]).any())


def main() -> None:
    from bench_compose import SETS, scored_devsets

    from dialeval.meta.correlation import correlate
    from dialeval.metrics.compose.model import ComposeModel
    from dialeval.models.defaults import default_model_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--cache", default=os.path.join(HERE, "out", "compose_gen", "scores"))
    ap.add_argument("--adem-runs", default=os.path.join(HERE, "out", "adem_lodo"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "defaults_lodo"))
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()
    ns = argparse.Namespace(cache=args.cache, out=args.out, refs_mode="multi", tokenize=None,
                            datasets=list(SETS), data_root=args.data_root,
                            alias={"engagement": "engaging", "fluent": "fluency"})
    options = {"mme_model": default_model_dir("mme"), "amfm_model": default_model_dir("amfm"),
               "lm_model": default_model_dir("lm")}
    devsets, signatures, _ = scored_devsets(ns, UNTRAINED + BASELINES, options)
    preds: dict[str, dict[str, np.ndarray]] = {}          # metric -> set -> predictions
    for m in UNTRAINED + BASELINES:
        preds[m] = {d.name: d.scores[m] for d in devsets}
    for name, members in COMPOSED.items():
        needs_refs = "sent_cosine" in members
        pool = [d for d in devsets if not needs_refs or has_refs(d)]
        for k, d in enumerate(pool):
            rest = [x for j, x in enumerate(pool) if j != k]
            model = ComposeModel(method="ridge", positive=True, seed=0).fit(rest, members)
            preds.setdefault(name, {})[d.name] = model.predict(d.scores, "overall")

    rows: dict[str, dict[str, dict]] = {}
    for metric, by_set in preds.items():
        for d in devsets:
            if d.name not in by_set:
                continue
            q = main_quality(d.human)
            pred, y = by_set[d.name], d.human[q]
            if not np.isfinite(pred).any():
                continue
            c = correlate(pred, y, methods=["spearman"], n_boot=args.n_boot, seed=0)[0]
            rows.setdefault(metric, {})[d.name] = {"quality": q, "r": c.r, "lo": c.ci_low, "hi": c.ci_high, "n": c.n}
    # ADEM: bench_adem_lodo.py's held-out predictions (its own rows and human scores)
    for metric, run in {**ADEM, **{f"{k} (old recipe)": v for k, v in ADEM_OLD.items()}}.items():
        path = os.path.join(args.adem_runs, run + ".npz")
        if not os.path.exists(path):
            print(f"(no {path}: run bench_adem_lodo.py for {metric})", file=sys.stderr)
            continue
        with np.load(path, allow_pickle=False) as z:
            pred, y, groups = z["pred"], z["y"], z["groups"]
        for s in np.unique(groups):
            sel = groups == s
            c = correlate(pred[sel], y[sel], methods=["spearman"], n_boot=args.n_boot, seed=0)[0]
            rows.setdefault(metric, {})[str(s)] = {"quality": "adem pool", "r": c.r, "lo": c.ci_low,
                                                   "hi": c.ci_high, "n": c.n}

    names = [d.name for d in devsets]
    ref_sets = [d.name for d in devsets if has_refs(d)]
    order = (["adem", "c_adem", "r_adem", "c_adem (old recipe)", "r_adem (old recipe)", "compose", "compose_ref"]
             + UNTRAINED + BASELINES)
    lines = ["Turn-level Spearman [95% bootstrap CI over items] with each set's main quality "
             f"({', '.join(f'{d.name}: {main_quality(d.human)}' for d in devsets)}); "
             "mean over the sets a metric scores, and over the sets with references alone.", "",
             "| metric | " + " | ".join(names) + " | mean | mean, sets with references |",
             "|---|" + "---|" * (len(names) + 2)]
    for metric in [m for m in order if m in rows]:
        got = rows[metric]
        cells = [f"{got[s]['r']:.3f} [{got[s]['lo']:.2f}, {got[s]['hi']:.2f}]" if s in got else "" for s in names]
        vals = [got[s]["r"] for s in names if s in got and math.isfinite(got[s]["r"])]
        ref_vals = [got[s]["r"] for s in ref_sets if s in got and math.isfinite(got[s]["r"])]
        lines.append(f"| {metric} | " + " | ".join(cells) + f" | **{np.mean(vals):.3f}** ({len(vals)}) | "
                     + (f"{np.mean(ref_vals):.3f} ({len(ref_vals)})" if ref_vals else "") + " |")
    text = "\n".join(lines)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "defaults_lodo.md"), "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    with open(os.path.join(args.out, "defaults_lodo.json"), "w", encoding="utf-8") as handle:
        json.dump({"rows": rows, "signatures": signatures}, handle, indent=1, default=float)


if __name__ == "__main__":
    main()
