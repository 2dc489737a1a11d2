"""Language-model metrics: throughput, and the holistic paper's measurements.

    python3 benchmarks/bench_lm.py throughput MODEL_DIR [--n 400] [--threads 2]
        responses per second for lm_coherence + lm_fluency, batched against one-at-a-time
    python3 benchmarks/bench_lm.py holistic MODEL_DIR ../shared/data/holistic-eval
        Pearson / Spearman of c(r|q) and f(r) with the mean human ratings (paper Tables 3-4),
        the raters' pairwise agreement, and the overlap of rated items with DailyDialog train
    python3 benchmarks/bench_lm.py perplexity MODEL_DIR ../shared/data/dailydialog/test.zip

Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

PAPER = {"coherence": {"fine-tuned GPT-2": (0.67, 0.76), "GPT-2 without fine-tuning": (0.59, 0.65),
                       "human raters mean/max (Pearson)": (0.61, 0.91)},
         "fluency": {"fine-tuned GPT-2": (0.82, 0.81), "GPT-2 without fine-tuning": (0.43, 0.32),
                     "human raters mean/max (Pearson)": (0.70, 0.88)}}


def read_holistic(data_dir: str):
    with open(os.path.join(data_dir, "context_data_release.csv"), encoding="utf-8", newline="") as h:
        ctx = [(r[0], r[1], r[2], [float(x) for x in r[3:13]]) for r in csv.reader(h) if r]
    with open(os.path.join(data_dir, "fluency_data_release.csv"), encoding="utf-8", newline="") as h:
        flu = [(r[0], r[1], [float(x) for x in r[2:12]]) for r in csv.reader(h) if r]
    return ctx, flu


def pairwise(ratings: np.ndarray) -> dict:
    from scipy.stats import pearsonr, spearmanr

    out = {}
    for name, fn in (("pearson", pearsonr), ("spearman", spearmanr)):
        vals = [fn(ratings[:, i], ratings[:, j])[0] for i, j in itertools.combinations(range(ratings.shape[1]), 2)]
        vals = [v for v in vals if np.isfinite(v)]
        out[name] = {"mean": float(np.mean(vals)), "max": float(np.max(vals))}
        # each rater against the mean of the others: the paper's "pairwise" mean/max reading
        loo = [fn(ratings[:, i], np.delete(ratings, i, axis=1).mean(axis=1))[0] for i in range(ratings.shape[1])]
        out[f"{name}_rater_vs_rest"] = {"mean": float(np.mean(loo)), "max": float(np.max(loo))}
    return out


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def cmd_holistic(args) -> None:
    from scipy.stats import pearsonr, spearmanr

    from dialeval.data.corpus import pairs, read_corpus, sentences
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs
    from dialeval.metrics.lm.metric import normalise

    ctx, flu = read_holistic(args.data)
    lm = load_lm(args.model, args.device)
    t = time.time()
    c_raw = mean_logprobs(lm, [r for _, _, r, _ in ctx], [q for _, q, _, _ in ctx])
    f_raw = mean_logprobs(lm, [r for _, r, _ in flu])
    seconds = time.time() - t
    out = {"model": args.model, "info": {k: lm.info.get(k) for k in ("parameters", "steps", "train_seconds",
                                                                    "reference_perplexity", "architecture")}}
    for kind, raw, rows in (("coherence", c_raw, ctx), ("fluency", f_raw, flu)):
        human = np.array([np.mean(r[-1]) for r in rows])
        bound = float(np.percentile(lm.reference[f"{kind}_raw"], args.percentile))
        score = normalise(raw, bound)
        ok = ~np.isnan(score)
        out[kind] = {
            "n": int(ok.sum()), "bound": bound,
            "normalised": {"pearson": pearsonr(score[ok], human[ok])[0], "spearman": spearmanr(score[ok], human[ok])[0]},
            "raw": {"pearson": pearsonr(raw[ok], human[ok])[0], "spearman": spearmanr(raw[ok], human[ok])[0]},
            "clipped_at_bound": int((raw[ok] <= bound).sum()),
            "raters": pairwise(np.array([r[-1] for r in rows])),
            "paper": PAPER[kind],
        }
    out["scoring_seconds_400"] = seconds
    if args.train:
        # the same correlations on the items that share no utterance with the training corpus
        dialogues = read_corpus(args.train)
        seen = {norm(s) for s in sentences(dialogues)}
        keep_c = np.array([norm(q) not in seen and norm(r) not in seen for _, q, r, _ in ctx])
        keep_f = np.array([norm(r) not in seen for _, r, _ in flu])
        for kind, raw, rows, keep in (("coherence", c_raw, ctx, keep_c), ("fluency", f_raw, flu, keep_f)):
            human = np.array([np.mean(r[-1]) for r in rows])
            score = normalise(raw, out[kind]["bound"])
            ok = keep & ~np.isnan(score)
            out[kind]["unseen_only"] = {"n": int(ok.sum()), "pearson": pearsonr(score[ok], human[ok])[0],
                                        "spearman": spearmanr(score[ok], human[ok])[0]}
    if args.train:
        dialogues = read_corpus(args.train)
        train_utts = {norm(s) for s in sentences(dialogues)}
        train_pairs = {(norm(q), norm(r)) for q, r in pairs(dialogues)}
        out["overlap_with_train"] = {
            "coherence_pairs_in_train": sum((norm(q), norm(r)) in train_pairs for _, q, r, _ in ctx),
            "coherence_queries_in_train": sum(norm(q) in train_utts for _, q, _, _ in ctx),
            "coherence_responses_in_train": sum(norm(r) in train_utts for _, _, r, _ in ctx),
            "fluency_responses_in_train": sum(norm(r) in train_utts for _, r, _ in flu),
            "train": args.train}
    print(json.dumps(out, indent=1, default=float))


def cmd_throughput(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    from dialeval.data.corpus import pairs, read_corpus
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    lm = load_lm(args.model, args.device)
    data = pairs(read_corpus(args.corpus))[: args.n]
    q = [a for a, _ in data]
    r = [b for _, b in data]
    rows = []
    for batch in (1, 32):
        n = len(r) if batch > 1 else min(len(r), 100)
        t = time.perf_counter()
        mean_logprobs(lm, r[:n], q[:n], batch_size=batch)
        mean_logprobs(lm, r[:n], batch_size=batch)
        dt = time.perf_counter() - t
        rows.append((batch, n, dt, n / dt))
    base = rows[0][3]
    print(f"model {args.model}: {lm.info.get('parameters', '?')} parameters, {args.threads} threads, device {args.device}")
    print("batch  responses  seconds  responses/s (coherence+fluency)  ratio vs batch 1")
    for batch, n, dt, rate in rows:
        print(f"{batch:5d}  {n:9d}  {dt:7.2f}  {rate:10.1f}  {rate / base:6.2f}x")


def cmd_perplexity(args) -> None:
    from dialeval.data.corpus import pairs, read_corpus
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import perplexity

    lm = load_lm(args.model, args.device)
    data = pairs(read_corpus(args.corpus))
    t = time.time()
    print(json.dumps({"model": args.model, "corpus": args.corpus, "pairs": len(data),
                      "perplexity": perplexity(lm, data), "seconds": time.time() - t}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("holistic")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--train", help="DailyDialog train (zip) to check the rated items against")
    p.add_argument("--percentile", type=float, default=5.0)
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=cmd_holistic)
    p = sub.add_parser("throughput")
    p.add_argument("model")
    p.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                                    "dailydialog", "test.zip"))
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=cmd_throughput)
    p = sub.add_parser("perplexity")
    p.add_argument("model")
    p.add_argument("corpus")
    p.add_argument("--device", default="cpu")
    p.set_defaults(func=cmd_perplexity)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
