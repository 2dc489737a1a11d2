"""MME sub-metrics on every local rated set: turn-level Spearman (95% bootstrap CI) of each
sub-metric with each quality, per-dataset score files for the composition work, and scoring
throughput against BLEU-4 timed in the same process.

    export PYTHONPATH=src OMP_NUM_THREADS=1
    python3 benchmarks/bench_mme.py --model models/mme-default --data ../shared/data \
        --out benchmarks/out/mme_results

Writes to --out: `<dataset>.jsonl` (as `dialeval score -o` writes, all mme_* metrics),
`correlations.csv`, `correlations.md`, `throughput.json`. Encoder features are cached on disk
(--feature-cache) so a rerun after retraining one head does not re-encode every text.

Two variants side by side (the fine-tuned model against the frozen one, in one process):

    python3 benchmarks/bench_mme.py --model models/mme-finetune --baseline-model models/mme-default \
        --metrics mme_fm,mme_rm,mme_em --out benchmarks/out/mme_results_finetune --throughput 100 --no-jsonl

adds `comparison.md` / `comparison.csv` (Spearman with CI of each variant and their difference
per set and quality) and times both variants beside BLEU-4 in `throughput.json`. The frozen
features come from --feature-cache; a fine-tuned sub-metric always encodes with its own layers.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from dialeval.data.datasets import load_dataset  # noqa: E402
from dialeval.data.writers import write_jsonl  # noqa: E402
from dialeval.meta.correlation import correlate  # noqa: E402
from dialeval.scoring import score  # noqa: E402

METRICS = ["mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll", "mme_sm_nce", "mme_sm_ppl"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_compose import SETS as _FOLDERS  # noqa: E402

SETS = list(_FOLDERS.items())


def load_features(path: str) -> None:
    from dialeval.metrics.mme.encoder import shared_encoder

    if path and os.path.exists(path):
        with np.load(path, allow_pickle=False) as data:
            texts, feats = data["texts"], data["features"]
        shared_encoder(None).cache.update({str(t): f for t, f in zip(texts, feats)})


def save_features(path: str) -> None:
    from dialeval.metrics.mme.encoder import shared_encoder

    cache = shared_encoder(None).cache
    if path and cache:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        np.savez(path, texts=np.array(list(cache), dtype=str), features=np.stack(list(cache.values())))


def engagement_reference(folder: str, samples) -> dict[str, np.ndarray]:
    """The Predictive Engagement authors' own released scores for the rated pairs (columns of
    Eng_Scores_queries_gen_gtruth_replies.csv), aligned to the loader's samples."""
    path = os.path.join(folder, "data", "Eng_Scores_queries_gen_gtruth_replies.csv")
    cols = ["Eng_Score_MeanPooling", "Eng_Score_MaxPooling", "Ruber_Unref_Score", "CTX_Unref_Score"]
    by_pair: dict[tuple[str, str], dict[str, float]] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            key = (" ".join(row["query"].split()), " ".join(row["response"].split()))
            by_pair.setdefault(key, {c: float(row[c].strip()) for c in cols})
    out = {c: np.full(len(samples), np.nan) for c in cols}
    for i, s in enumerate(samples):
        key = (" ".join((s.context[-1] if s.context else "").split()), " ".join(s.response.split()))
        if key in by_pair:
            for c in cols:
                out[c][i] = by_pair[key][c]
    return out


def clear_encoder_caches(model: str) -> None:
    """Empty the shared frozen encoder's cache and every tuned encoder's of `model`."""
    from dialeval.metrics.mme.encoder import shared_encoder
    from dialeval.metrics.mme.model import load_cached

    shared_encoder(None).cache.clear()
    folder = load_cached(model)
    for sub in ("fm", "rm", "em"):
        if folder.has(sub):
            tuned = getattr(folder.get(sub), "_tuned_encoder", None)
            if tuned is not None:
                tuned.cache.clear()


def throughput(samples, models: dict[str, str], n: int, metrics: list[str]) -> dict:
    """Seconds, CPU seconds and samples/s per metric and model variant on `n` samples, each
    MME metric starting from empty encoder caches, beside BLEU-4 timed in the same process."""
    part = samples[:n]
    out = {}
    t = time.perf_counter()
    score(part, ["bleu4"])
    base = time.perf_counter() - t
    out["bleu4"] = {"seconds": round(base, 3), "samples_per_s": round(n / base, 1), "ratio_to_bleu4": 1.0}
    for label, model in models.items():
        score(part[:2], metrics, mme_model=model)          # load the models outside the timing
        for m in metrics + ["all"]:
            clear_encoder_caches(model)
            t, c = time.perf_counter(), time.process_time()
            score(part, metrics if m == "all" else [m], mme_model=model)
            sec, cpu = time.perf_counter() - t, time.process_time() - c
            key = m if len(models) == 1 else f"{m}@{label}"
            out["all_mme" if key == "all" else key] = {
                "seconds": round(sec, 2), "cpu_seconds": round(cpu, 2), "samples_per_s": round(n / sec, 2),
                "ratio_to_bleu4": round(sec / base, 1)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="models/mme-default")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default="benchmarks/out/mme_results")
    ap.add_argument("--sets", help="comma-separated subset of the data set names")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--feature-cache", default="out/mme-feature-cache.npz")
    ap.add_argument("--throughput", type=int, default=0, help="also time scoring on N usr-tc samples")
    ap.add_argument("--no-jsonl", action="store_true")
    ap.add_argument("--metrics", help="comma-separated subset of the mme_* metrics (default: all seven)")
    ap.add_argument("--baseline-model", help="a second MME folder (e.g. the frozen default) scored in the same "
                                             "process; writes comparison.md/.csv")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    metrics = args.metrics.split(",") if args.metrics else METRICS
    models = {"model": args.model}
    if args.baseline_model:
        models = {"baseline": args.baseline_model, "model": args.model}
    wanted = set(args.sets.split(",")) if args.sets else None
    load_features(args.feature_cache)
    rows = []
    for name, folder in SETS:
        if wanted and name not in wanted:
            continue
        path = os.path.join(args.data, folder)
        if not os.path.isdir(path):
            print(f"skip {name}: {path} absent", file=sys.stderr)
            continue
        ds = load_dataset(name, path)
        columns = {}
        took = []
        for label, model in models.items():
            t = time.perf_counter()
            result = score(ds.samples, metrics, mme_model=model)
            sec = time.perf_counter() - t
            took.append(f"{label} {sec:.1f} s")
            save_features(args.feature_cache)
            if not args.no_jsonl and label == "model":
                # rows as `dialeval score -o` writes them, less the context (it is in the data set,
                # joined by id), so that the ten files stay small enough to keep in the repository
                write_jsonl(os.path.join(args.out, f"{name}.jsonl"),
                            ({k: v for k, v in rec.items() if k != "context"} for rec in result.records()))
            columns.update({(m if label == "model" else f"{label}:{m}"): result.sentence[m] for m in metrics})
        if name == "predictive-engagement":
            columns.update({f"published:{k}": v for k, v in engagement_reference(path, ds.samples).items()})
        for q in ds.info.qualities:
            human = np.array([s.human(q) for s in ds.samples], dtype=float)
            for m, values in columns.items():
                c = correlate(values, human, ["spearman"], n_boot=args.n_boot, seed=0)[0]
                rows.append({"dataset": name, "quality": q, "metric": m, "n": c.n, "spearman": round(c.r, 4),
                             "ci_low": round(c.ci_low, 4), "ci_high": round(c.ci_high, 4), "p": c.p})
        print(f"{name}: {len(ds.samples)} samples scored ({', '.join(took)})", file=sys.stderr)
    if rows:
        with open(os.path.join(args.out, "correlations.csv"), "w", newline="") as handle:
            w = csv.DictWriter(handle, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        write_markdown(rows, os.path.join(args.out, "correlations.md"))
        if args.baseline_model:
            write_comparison(rows, metrics, args, os.path.join(args.out, "comparison"))
    if args.throughput:
        ds = load_dataset("usr-tc", os.path.join(args.data, "usr"))
        tp = throughput(ds.samples, models, args.throughput, metrics)
        with open(os.path.join(args.out, "throughput.json"), "w") as handle:
            json.dump(tp, handle, indent=1)
        print(json.dumps(tp, indent=1))
    return 0


# the qualities each sub-metric is meant for (the bold cells of the closing note's table)
MEANT = {"mme_fm": {"understandable", "natural", "fluent", "fluency", "overall"},
         "mme_rm": {"maintains_context", "relevant", "correct", "semantically_appropriate", "coherence", "overall"},
         "mme_em": {"engaging", "interesting", "engagement", "overall"}}


def write_comparison(rows, metrics: list[str], args, stem: str) -> None:
    """Baseline and model side by side per (set, quality, metric), with the difference, and the
    mean Spearman of each metric over every pair and over the pairs it is meant for."""
    keyed = {(r["dataset"], r["quality"], r["metric"]): r for r in rows}
    out = []
    for ds, q in dict.fromkeys((r["dataset"], r["quality"]) for r in rows):
        for m in metrics:
            a, b = keyed.get((ds, q, f"baseline:{m}")), keyed.get((ds, q, m))
            if a and b:
                out.append({"dataset": ds, "quality": q, "metric": m, "n": b["n"],
                            "baseline": a["spearman"], "baseline_ci": f"[{a['ci_low']:.2f}, {a['ci_high']:.2f}]",
                            "model": b["spearman"], "model_ci": f"[{b['ci_low']:.2f}, {b['ci_high']:.2f}]",
                            "diff": round(b["spearman"] - a["spearman"], 4),
                            "meant": q in MEANT.get(m, set())})
    with open(stem + ".csv", "w", newline="") as handle:
        w = csv.DictWriter(handle, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    lines = [f"# {args.model} (model) against {args.baseline_model} (baseline)", "",
             f"Turn-level Spearman, 95% bootstrap CI ({args.n_boot} resamples, seed 0); * = a quality the sub-metric is "
             "meant for.", "", "| dataset | quality | n | " +
             " | ".join(f"{m} baseline | {m} model | diff" for m in metrics) + " |",
             "|---|---|---:|" + "---:|---:|---:|" * len(metrics)]
    by = {(r["dataset"], r["quality"], r["metric"]): r for r in out}
    for ds, q in dict.fromkeys((r["dataset"], r["quality"]) for r in out):
        cells = []
        for m in metrics:
            r = by[(ds, q, m)]
            star = "*" if r["meant"] else ""
            cells += [f"{r['baseline']:.3f}{star} {r['baseline_ci']}", f"{r['model']:.3f}{star} {r['model_ci']}",
                      f"{r['diff']:+.3f}"]
        lines.append(f"| {ds} | {q} | {by[(ds, q, metrics[0])]['n']} | " + " | ".join(cells) + " |")
    lines += ["", "| metric | pairs | mean baseline | mean model | mean diff | model better on |",
              "|---|---:|---:|---:|---:|---:|"]
    for m in metrics:
        for label, sel in (("all", [r for r in out if r["metric"] == m]),
                           ("meant", [r for r in out if r["metric"] == m and r["meant"]])):
            if sel:
                lines.append(f"| {m} ({label}) | {len(sel)} | {np.mean([r['baseline'] for r in sel]):.3f} | "
                             f"{np.mean([r['model'] for r in sel]):.3f} | {np.mean([r['diff'] for r in sel]):+.3f} | "
                             f"{sum(r['diff'] > 0 for r in sel)}/{len(sel)} |")
    with open(stem + ".md", "w") as handle:
        handle.write("\n".join(lines) + "\n")


def write_markdown(rows, path: str) -> None:
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    mme = [m for m in metrics if m.startswith("mme_")]
    lines = ["| dataset | quality | n | " + " | ".join(mme) + " |", "|---|---|---:|" + "---:|" * len(mme)]
    keyed = {(r["dataset"], r["quality"], r["metric"]): r for r in rows}
    for ds, q in dict.fromkeys((r["dataset"], r["quality"]) for r in rows):
        cells = []
        for m in mme:
            r = keyed[(ds, q, m)]
            cells.append(f"{r['spearman']:.3f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]")
        n = keyed[(ds, q, mme[0])]["n"]
        lines.append(f"| {ds} | {q} | {n} | " + " | ".join(cells) + " |")
    published = [r for r in rows if r["metric"].startswith("published:")]
    if published:
        lines += ["", "Predictive Engagement authors' released scores on the same pairs:", "",
                  "| metric | spearman [95% CI] |", "|---|---:|"]
        lines += [f"| {r['metric'][10:]} | {r['spearman']:.3f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}] |"
                  for r in published]
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
