"""ADEM's experiments on our rated sets (the paper's Tables 3 and 5 and its data-efficiency figure).

    python3 benchmarks/bench_adem.py [--preset paper|released] main [--hred models/hred-dd] [--n-boot 1000]
    python3 benchmarks/bench_adem.py [--preset ...] perset [--hred models/hred-dd]
    python3 benchmarks/bench_adem.py [--preset ...] loso [--encoder minilm|hred:DIR]
    python3 benchmarks/bench_adem.py [--preset ...] efficiency [--seeds 10] [--encoder minilm|hred:DIR]
    python3 benchmarks/bench_adem.py speed --minilm-model DIR [--hred-model DIR] [--n 100]
    python3 benchmarks/bench_adem.py perplexity --encoder models/hred-dd
    python3 benchmarks/bench_adem.py plot
    python3 benchmarks/bench_adem.py --preset released --search finetune --finetune-layers 1 [--only SETTING ...]

Everything is written to benchmarks/out/adem_results/ (CSV, markdown, PNG, JSON). Settings are the
paper's (preset `paper`: PCA 7, L1 gamma 0.02, lr 0.01, batch 16) and are never chosen on a
test split: early stopping reads a validation split of the *training* side only.

- **in-domain**: the pooled rated sets split by context 70/15/15 (seed 0): train / validation
  (early stopping) / test;
- **leave-one-dataset-out**: train on all other sets (their contexts split 85/15 into train and
  validation), test on the whole held-out set;
- **leave-one-system-out** (`loso`): inside usr-tc, usr-pc, the three grade sets and gupta,
  train on the whole pool except one (dataset, system), test on that system's responses (as
  the paper's Table 5, the held-out system's contexts are seen with other systems' responses);
- **data efficiency**: the in-domain split, 5..100% of its training rows, several seeds.

Encoder vectors come from the cache in benchmarks/adem_common.py (each text encoded once).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adem_common import DATA as DATA_DIR, encode_pool, pool, vectors  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "adem_results")
PAPER_TABLE3 = 0.414     # ADEM (VHRED) test Spearman, Twitter data, paper Table 3
PAPER_TABLE5 = 0.4164    # mean leave-one-system-out Spearman, paper Table 5
PAPER_EFFICIENCY = {5: 0.098, 100: 0.414}   # paper's Table 14 endpoints (Twitter data)
PAPER_FRACTIONS = [5, 10, 25, 50, 75, 100]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- shared ---------------------------------------------------------------------------------

class Vectors:
    """Pool rows with their vectors for one encoder."""

    def __init__(self, rows, spec):
        self.spec = spec
        ctx, txt, k = encode_pool(rows, spec, log=log)
        self.C, self.R, self.H = vectors(rows, ctx, txt, k)
        self.txt = txt


PRESET = "paper"
SEARCH = False      # --search: each fit picks PCA size and lr on its own validation split
LABEL = PRESET      # output suffix: the preset, plus "_search" with --search


def fit(variant, vec, rows, train, val, seed=0, **kw):
    from dialeval.metrics.learned.adem.model import SEARCH_GRID, Adem

    kw.setdefault("preset", PRESET)
    m = Adem(encoder=vec.spec, variant=variant, seed=seed, **kw)
    y = np.array([r.score for r in rows])
    lengths = np.array([len(r.response.split()) for r in rows])
    tr, va = np.asarray(train), np.asarray(val)
    if variant != "c_adem":
        tr = tr[np.isfinite(vec.R[tr]).all(axis=1)]
        va = va[np.isfinite(vec.R[va]).all(axis=1)]
    fitting = m.fit_vectors if not SEARCH else (lambda *a, **k: m.search_vectors(SEARCH_GRID, *a, **k))
    fitting(vec.C[tr], vec.R[tr], vec.H[tr], y[tr], lengths[tr], val=(vec.C[va], vec.R[va], vec.H[va], y[va]))
    return m


def predict(m, vec, idx):
    idx = np.asarray(idx)
    return m.predict_vectors(vec.C[idx], vec.R[idx], vec.H[idx])


def baselines(rows, idx, vec_minilm):
    """sent_cosine (max over references, MiniLM vectors), BLEU-2, ROUGE-L (pycocoevalcap rules)."""
    from dialeval.metrics.base import Batch
    from dialeval.metrics.registry import build_metric

    sub = [rows[i] for i in idx]
    batch = Batch([r.response for r in sub], [r.references for r in sub], [r.context for r in sub])
    out = {name: build_metric(name).compute(batch).sentence for name in ("bleu2", "rouge_l")}
    cos = np.full(len(sub), np.nan)
    for j, r in enumerate(sub):
        if r.references:
            h = vec_minilm.txt[r.response]
            cos[j] = max(float(h @ vec_minilm.txt[t]) / (np.linalg.norm(h) * np.linalg.norm(vec_minilm.txt[t]) + 1e-12)
                         for t in r.references)
    out["sent_cosine"] = cos
    return out


def spearman_ci(x, y, n_boot, seed=0):
    from dialeval.meta.correlation import correlate

    c = correlate(x, y, methods=["spearman"], n_boot=n_boot, seed=seed)[0]
    return c.r, c.ci_low, c.ci_high, c.n, c.p


def write_csv(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(header)
        w.writerows(rows)


def fmt(v, nd=3):
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{nd}f}"


def splits(rows):
    from dialeval.metrics.learned.adem.data import split_by_context

    return split_by_context(rows, [0.70, 0.15, 0.15], seed=0)


def pooled_vectors(args):
    """The pooled rated rows, their scores, and the encoders' vectors (MiniLM, and VHRED with --hred)."""
    rows = pool()
    y = np.array([r.score for r in rows])
    vm = Vectors(rows, "minilm")
    encs = {"minilm": vm}
    if args.hred:
        encs["hred"] = Vectors(rows, f"hred:{os.path.abspath(args.hred)}")
    return rows, y, vm, encs


# -- main table -----------------------------------------------------------------------------

def cmd_main(args):
    from dialeval.meta.significance import compare
    from dialeval.metrics.learned.adem.data import WITH_REFERENCES, split_by_context

    rows, y, vm, encs = pooled_vectors(args)
    has_ref = np.array([bool(r.references) for r in rows])
    datasets = [d for d in WITH_REFERENCES]
    systems = ["ADEM (minilm)"] + (["ADEM (hred)"] if args.hred else []) + \
        ["C-ADEM (minilm)", "R-ADEM (minilm)", "ADEM at init (minilm)"] + \
        (["ADEM at init (hred)"] if args.hred else []) + ["sent_cosine", "BLEU-2", "ROUGE-L"]
    results = {}     # (setting, system) -> (r, lo, hi, n, p)
    preds = {}
    timing = {}
    chosen = {}     # the settings each ADEM fit ended with (chosen on validation with --search)

    def evaluate(setting, train, val, test):
        test = np.asarray([i for i in test if has_ref[i]])
        scores = {}
        for name, vec in encs.items():
            t0 = time.time()
            m = fit("adem", vec, rows, train, val)
            timing[(setting, name)] = time.time() - t0
            chosen[f"{setting} | {name}"] = {"pca_dims": m.pca_dims, "dims": m.head_.dims, "lr": m.lr,
                                             "best_epoch": m.training_["best_epoch"],
                                             "val_spearman": round(m.training_["val_spearman"], 4)}
            if setting.startswith("in-domain") and args.save_dir:
                m.record_provenance([rows[i] for i in train])
                m.training_["benchmark"] = "bench_adem.py main: in-domain 70% split, seed 0"
                m.save(os.path.join(args.save_dir, f"adem-{name}-{LABEL}"))
            scores[f"ADEM ({name})"] = predict(m, vec, test)
            scores[f"ADEM at init ({name})"] = predict(m.at_initialisation(), vec, test)
        for variant, label in (("c_adem", "C-ADEM (minilm)"), ("r_adem", "R-ADEM (minilm)")):
            scores[label] = predict(fit(variant, vm, rows, train, val), vm, test)
        b = baselines(rows, test, vm)
        scores["sent_cosine"], scores["BLEU-2"], scores["ROUGE-L"] = b["sent_cosine"], b["bleu2"], b["rouge_l"]
        for s, v in scores.items():
            results[(setting, s)] = spearman_ci(v, y[test], args.n_boot)
        preds[setting] = (scores, y[test])
        log(f"{setting}: " + ", ".join(f"{s} {results[(setting, s)][0]:.3f}" for s in systems))

    tr, va, te = splits(rows)
    evaluate("in-domain (pooled, test 15%)", tr, va, te)
    for held in datasets:
        rest = [i for i, r in enumerate(rows) if r.dataset != held]
        parts = split_by_context([rows[i] for i in rest], [0.85, 0.15], seed=0)
        train = [rest[i] for i in parts[0]]
        val = [rest[i] for i in parts[1]]
        test = [i for i, r in enumerate(rows) if r.dataset == held]
        evaluate(held, train, val, test)

    # sets without references: only C-ADEM can score them (trained on all the other sets)
    free = []
    for held in ("fed-turn", "holistic-coherence"):
        rest = [i for i, r in enumerate(rows) if r.dataset != held]
        parts = split_by_context([rows[i] for i in rest], [0.85, 0.15], seed=0)
        test = [i for i, r in enumerate(rows) if r.dataset == held]
        for name, vec in encs.items():
            m = fit("c_adem", vec, rows, [rest[i] for i in parts[0]], [rest[i] for i in parts[1]])
            r, lo, hi, n, p = spearman_ci(predict(m, vec, test), y[test], args.n_boot)
            free.append([held, f"C-ADEM ({name})", n, fmt(r), fmt(lo), fmt(hi), fmt(p, 4)])
            log(f"{held}: C-ADEM ({name}) {r:.3f}")
    write_csv(os.path.join(OUT, f"c_adem_reference_free_{LABEL}.csv"),
              ["held-out set", "metric", "n", "spearman", "ci low", "ci high", "p"], free)

    settings = ["in-domain (pooled, test 15%)"] + datasets
    header = ["setting", "n"] + systems
    table = []
    for st in settings:
        n = results[(st, "ADEM (minilm)")][3]
        table.append([st, n] + [f"{fmt(results[(st, s)][0])} [{fmt(results[(st, s)][1], 2)}, {fmt(results[(st, s)][2], 2)}]"
                                for s in systems])
    means = ["mean over held-out sets", ""] + [fmt(np.mean([results[(d, s)][0] for d in datasets])) for s in systems]
    table.append(means)
    table.append(["paper Table 3 (Twitter, ADEM VHRED, test)", 616, str(PAPER_TABLE3)] + [""] * (len(systems) - 1))
    write_csv(os.path.join(OUT, f"main_table_{LABEL}.csv"), header, table)

    # Williams' test: ADEM (minilm) vs the best baseline on each setting (Spearman correlations)
    wt = []
    for st in settings:
        scores, human = preds[st]
        base = max(("sent_cosine", "BLEU-2", "ROUGE-L"),
                   key=lambda s: results[(st, s)][0] if not math.isnan(results[(st, s)][0]) else -9)
        for who in [s for s in scores if s.startswith("ADEM (")]:
          for other in (base, who.replace("ADEM (", "ADEM at init (")):
            c = compare(scores[who], scores[other], human, method="spearman", n_boot=args.n_boot,
                        names=(who, other))
            if c.r_ab > 0.999999:
                wt.append([st, who, other, c.n, fmt(c.r_a), fmt(c.r_b), fmt(c.r_ab), "identical (early stop at epoch 0)",
                           "", ""])
                continue
            wt.append([st, who, other, c.n, fmt(c.r_a), fmt(c.r_b), fmt(c.r_ab), fmt(c.williams_t, 2),
                       fmt(c.williams_p, 4), fmt(c.bootstrap_p, 4)])
    write_csv(os.path.join(OUT, f"williams_{LABEL}.csv"),
              ["setting", "metric", "best baseline", "n", "r metric", "r baseline", "r between", "Williams t",
               "one-sided p", "paired bootstrap p"], wt)
    with open(os.path.join(OUT, f"main_table_{LABEL}.md"), "w") as handle:
        handle.write("Turn-level Spearman [95% bootstrap CI] with the (1-5 mapped) human score.\n\n")
        handle.write("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
        for row in table:
            handle.write("| " + " | ".join(str(c) for c in row) + " |\n")
        handle.write("\nWilliams' test (Spearman correlations): each ADEM against the best of sent_cosine / BLEU-2 / ROUGE-L on the setting, and against itself at initialisation:\n\n")
        handle.write("| setting | metric | best baseline | n | r metric | r baseline | r between | t | p (one-sided) | bootstrap p |\n"
                     "|---|---|---|---|---|---|---|---|---|---|\n")
        for row in wt:
            handle.write("| " + " | ".join(str(c) for c in row) + " |\n")
    with open(os.path.join(OUT, f"main_timing_{LABEL}.json"), "w") as handle:
        json.dump({"seconds": {f"{k[0]} | {k[1]}": round(v, 2) for k, v in timing.items()},
                   "settings (pca_dims 0: all)": chosen}, handle, indent=1)
    print(open(os.path.join(OUT, f"main_table_{LABEL}.md")).read())


# -- fine-tuned MiniLM ADEM (stage 2) ---------------------------------------------------------

IN_DOMAIN = "in-domain (pooled, test 15%)"


def setting_splits(rows):
    """(setting, train, validation, test) for the in-domain split and each held-out set, as `main`."""
    from dialeval.metrics.learned.adem.data import WITH_REFERENCES, split_by_context

    tr, va, te = splits(rows)
    out = [(IN_DOMAIN, tr, va, te)]
    for held in WITH_REFERENCES:
        rest = [i for i, r in enumerate(rows) if r.dataset != held]
        parts = split_by_context([rows[i] for i in rest], [0.85, 0.15], seed=0)
        out.append((held, [rest[i] for i in parts[0]], [rest[i] for i in parts[1]],
                    [i for i, r in enumerate(rows) if r.dataset == held]))
    return out


def cmd_finetune(args):
    """ADEM (minilm) with the top N MiniLM layers fine-tuned (stage 2) beside the same stage-1
    model, ADEM at initialisation and the baselines, on the in-domain split and each held-out
    set. Stage 1 is `fit` (the settings search with --search); with --stage1-settings, each
    setting's search result is refitted directly from the settings recorded in that file (the
    search keeps exactly that candidate: same rows, same seed), and its validation Spearman is
    checked against the recorded one. One JSON per setting in benchmarks/out/adem_results/finetune_LABEL/, so
    a partial run keeps what finished; the table is built from every JSON present."""
    import resource

    import torch

    from dialeval.meta.significance import compare

    torch.set_num_threads(1)
    label = f"{LABEL}_ft{args.finetune_layers}"
    folder = os.path.join(OUT, f"finetune_{label}")
    os.makedirs(folder, exist_ok=True)
    rows = pool()
    y = np.array([r.score for r in rows])
    vm = Vectors(rows, "minilm")
    has_ref = np.array([bool(r.references) for r in rows])
    recorded = {}
    if args.stage1_settings:
        with open(args.stage1_settings) as handle:
            recorded = json.load(handle)["settings (pca_dims 0: all)"]
    for setting, train, val, test in setting_splits(rows):
        if args.only and setting not in args.only:
            continue
        path = os.path.join(folder, setting.split(" ")[0] + ".json")
        if os.path.exists(path) and not args.redo:
            log(f"{setting}: done before ({path})")
            continue
        cpu0, t0 = time.process_time(), time.time()
        chosen = recorded.get(f"{setting} | minilm")
        if chosen:
            m = fit("adem", vm, rows, train, val, pca_dims=chosen["pca_dims"], lr=chosen["lr"])
            if abs(m.training_["val_spearman"] - chosen["val_spearman"]) > 1e-4:
                raise SystemExit(f"{setting}: stage 1 validation {m.training_['val_spearman']:.4f} is not the "
                                 f"recorded {chosen['val_spearman']}; run without --stage1-settings")
        else:
            m = fit("adem", vm, rows, train, val)
        stage1_cpu = time.process_time() - cpu0
        te = np.asarray([i for i in test if has_ref[i]])
        scores = {"ADEM stage 1 (minilm, frozen)": predict(m, vm, te),
                  "ADEM at init (minilm)": predict(m.at_initialisation(), vm, te)}
        m.set_params(finetune_layers=args.finetune_layers, finetune_lr=args.finetune_lr,
                     finetune_epochs=args.finetune_epochs, finetune_minutes=args.max_minutes)
        cpu1, t1 = time.process_time(), time.time()
        m.finetune_rows(rows, train, val, progress=log)
        stage2_cpu, stage2_wall = time.process_time() - cpu1, time.time() - t1
        sub = [rows[i] for i in te]
        scores[f"ADEM fine-tuned top{args.finetune_layers} (minilm)"] = (
            m.predict([r.context for r in sub], [r.references for r in sub], [r.response for r in sub])
            if m.is_tuned() else scores["ADEM stage 1 (minilm, frozen)"])
        b = baselines(rows, te, vm)
        scores["sent_cosine"], scores["BLEU-2"], scores["ROUGE-L"] = b["sent_cosine"], b["bleu2"], b["rouge_l"]
        res = {s: spearman_ci(v, y[te], args.n_boot) for s, v in scores.items()}
        ft = f"ADEM fine-tuned top{args.finetune_layers} (minilm)"
        best_base = max(("sent_cosine", "BLEU-2", "ROUGE-L"), key=lambda s: res[s][0])
        tests = {}
        for other in (best_base, "ADEM stage 1 (minilm, frozen)"):
            c = compare(scores[ft], scores[other], y[te], method="spearman", n_boot=args.n_boot, names=(ft, other))
            tests[other] = {"r_between": c.r_ab, "williams_t": c.williams_t, "williams_p": c.williams_p,
                            "bootstrap_p": c.bootstrap_p}
        info = m.training_["finetune"]
        rec = {"setting": setting, "n": int(len(te)), "train_rows": len(train), "validation_rows": len(val),
               "stage1": {"pca_dims": m.pca_dims, "dims": m.head_.dims, "lr": m.lr,
                          "val_spearman": info["val_spearman_stage1"], "cpu_s": round(stage1_cpu, 1),
                          "from_recorded_settings": bool(chosen)},
               "stage2": {k: v for k, v in info.items()}, "stage2_cpu_s": round(stage2_cpu, 1),
               "stage2_wall_s": round(stage2_wall, 1), "total_wall_s": round(time.time() - t0, 1),
               "finetune": {"layers": args.finetune_layers, "lr": args.finetune_lr, "epochs": args.finetune_epochs},
               "spearman": {s: list(v) for s, v in res.items()}, "best_baseline": best_base, "williams": tests,
               "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
        with open(path, "w") as handle:
            json.dump(rec, handle, indent=1, default=float)
        log(f"{setting}: " + ", ".join(f"{s} {v[0]:.3f}" for s, v in res.items()) +
            f"; validation {info['val_spearman_stage1']:.4f} -> {info['val_spearman']:.4f}; stage 2 {stage2_cpu:.0f} CPU s")
        if setting == IN_DOMAIN and args.save_dir and m.is_tuned():
            m.record_provenance([rows[i] for i in train])
            m.training_["benchmark"] = "bench_adem.py finetune: in-domain 70% split, seed 0"
            m.save(os.path.join(args.save_dir, f"adem-minilm-{label}"))
    finetune_table(folder, label)


def finetune_table(folder, label):
    """The markdown table of every finished setting in `folder`."""
    from dialeval.metrics.learned.adem.data import WITH_REFERENCES

    recs = {}
    for path in glob.glob(os.path.join(folder, "*.json")):
        with open(path) as handle:
            rec = json.load(handle)
        recs[rec["setting"]] = rec
    if not recs:
        return
    systems = list(next(iter(recs.values()))["spearman"])
    order = [IN_DOMAIN] + list(WITH_REFERENCES)
    lines = ["Turn-level Spearman [95% bootstrap CI] with the (1-5 mapped) human score; stage 1 = the frozen "
             "ADEM fit (settings searched on validation), stage 2 = top MiniLM layers fine-tuned with M, N, "
             "early-stopped on the same validation split.\n",
             "| setting | n | " + " | ".join(systems) + " | validation stage 1 -> 2 | stage-2 CPU s |",
             "|---|---|" + "---|" * (len(systems) + 2)]
    for st in [s for s in order if s in recs]:
        rec = recs[st]
        cells = [f"{fmt(v[0])} [{fmt(v[1], 2)}, {fmt(v[2], 2)}]" for v in rec["spearman"].values()]
        lines.append(f"| {st} | {rec['n']} | " + " | ".join(cells) +
                     f" | {rec['stage2']['val_spearman_stage1']:.4f} -> {rec['stage2']['val_spearman']:.4f} | "
                     f"{rec['stage2_cpu_s']:.0f} |")
    held = [s for s in WITH_REFERENCES if s in recs]
    if held:
        lines.append(f"| mean over {len(held)} of {len(WITH_REFERENCES)} held-out sets | | " +
                     " | ".join(fmt(np.mean([recs[s]["spearman"][k][0] for s in held])) for k in systems) + " | | |")
    lines.append("\nWilliams' test (Spearman), the fine-tuned ADEM against the best baseline and against stage 1:\n")
    lines.append("| setting | other | r between | t | p (one-sided) | bootstrap p |\n|---|---|---|---|---|---|")
    for st in [s for s in order if s in recs]:
        for other, t in recs[st]["williams"].items():
            lines.append(f"| {st} | {other} | {fmt(t['r_between'])} | {fmt(t['williams_t'], 2)} | "
                         f"{fmt(t['williams_p'], 4)} | {fmt(t['bootstrap_p'], 4)} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, f"main_table_{label}.md"), "w") as handle:
        handle.write(text)
    print(text)


# -- in-domain inside each set ----------------------------------------------------------------

def cmd_perset(args):
    """The paper's own setting (one data set, split by context 70/15/15) on each of our sets."""
    from dialeval.metrics.learned.adem.data import WITH_REFERENCES, split_by_context

    rows, y, vm, encs = pooled_vectors(args)
    systems = [f"ADEM ({e})" for e in encs] + [f"ADEM at init ({e})" for e in encs] + \
        ["sent_cosine", "BLEU-2", "ROUGE-L"]
    table = []
    for ds in WITH_REFERENCES:
        idx = [i for i, r in enumerate(rows) if r.dataset == ds]
        parts = split_by_context([rows[i] for i in idx], [0.70, 0.15, 0.15], seed=0)
        tr, va, te = ([idx[i] for i in p] for p in parts)
        scores = {}
        for name, vec in encs.items():
            m = fit("adem", vec, rows, tr, va)
            scores[f"ADEM ({name})"] = predict(m, vec, te)
            scores[f"ADEM at init ({name})"] = predict(m.at_initialisation(), vec, te)
        b = baselines(rows, te, vm)
        scores["sent_cosine"], scores["BLEU-2"], scores["ROUGE-L"] = b["sent_cosine"], b["bleu2"], b["rouge_l"]
        res = {s: spearman_ci(scores[s], y[np.asarray(te)], args.n_boot) for s in systems}
        table.append([ds, len(tr), len(te)] + [f"{fmt(res[s][0])} [{fmt(res[s][1], 2)}, {fmt(res[s][2], 2)}]"
                                               for s in systems])
        log(f"{ds}: " + ", ".join(f"{s} {res[s][0]:.3f}" for s in systems))
    means = ["mean", "", ""] + [fmt(np.mean([float(t[3 + j].split()[0]) for t in table])) for j in range(len(systems))]
    table.append(means)
    write_csv(os.path.join(OUT, f"perset_{LABEL}.csv"), ["set", "train rows", "test rows"] + systems, table)
    print("\n".join(",".join(str(c) for c in t) for t in table))


# -- leave one system out -------------------------------------------------------------------

def cmd_loso(args):
    from dialeval.metrics.learned.adem.data import split_by_context

    rows = pool()
    y = np.array([r.score for r in rows])
    vm = Vectors(rows, args.encoder)
    out = []
    for ds in ("usr-tc", "usr-pc", "grade-dailydialog", "grade-convai2", "grade-empatheticdialogues", "gupta"):
        for system in sorted({r.system for r in rows if r.dataset == ds}):
            test = [i for i, r in enumerate(rows) if r.dataset == ds and r.system == system]
            rest = [i for i, r in enumerate(rows) if not (r.dataset == ds and r.system == system)]
            parts = split_by_context([rows[i] for i in rest], [0.85, 0.15], seed=0)
            m = fit("adem", vm, rows, [rest[i] for i in parts[0]], [rest[i] for i in parts[1]])
            r, lo, hi, n, p = spearman_ci(predict(m, vm, test), y[test], args.n_boot)
            out.append([ds, system, n, fmt(r), fmt(lo), fmt(hi), fmt(p, 4)])
            log(f"{ds} / {system}: {r:.3f} (n={n})")
    mean = np.mean([float(o[3]) for o in out])
    out.append(["mean", "", "", fmt(mean), "", "", ""])
    out.append(["paper Table 5 (Twitter, mean)", "", "", str(PAPER_TABLE5), "", "", ""])
    write_csv(os.path.join(OUT, f"loso_{args.encoder.split(':')[0]}_{LABEL}.csv"),
              ["dataset", "held-out system", "n", "spearman", "ci low", "ci high", "p"], out)
    print("\n".join(",".join(str(c) for c in o) for o in out))


# -- data efficiency ------------------------------------------------------------------------

def cmd_efficiency(args):
    rows = pool()
    y = np.array([r.score for r in rows])
    vm = Vectors(rows, args.encoder)
    has_ref = np.array([bool(r.references) for r in rows])
    tr, va, te = splits(rows)
    tr = [i for i in tr if has_ref[i]]
    te = np.array([i for i in te if has_ref[i]])
    res = {}
    for frac in PAPER_FRACTIONS:
        for seed in range(args.seeds):
            rng = np.random.default_rng(1000 + seed)
            k = max(10, int(round(len(tr) * frac / 100)))
            sub = sorted(rng.choice(tr, size=k, replace=False)) if frac < 100 else tr
            m = fit("adem", vm, rows, sub, va, seed=seed)
            r = spearman_ci(predict(m, vm, te), y[te], 0)[0]
            res.setdefault(frac, []).append(r)
            log(f"{frac}% seed {seed}: {r:.3f} ({k} rows, {m.training_['epochs']} epochs)")
    table = [[f, len(tr) * f // 100, len(v), fmt(np.mean(v)), fmt(np.std(v)), fmt(min(v)), fmt(max(v)),
              PAPER_EFFICIENCY.get(f, "")] for f, v in res.items()]
    write_csv(os.path.join(OUT, f"efficiency_{args.encoder.split(':')[0]}_{LABEL}.csv"),
              ["percent", "train rows", "seeds", "mean spearman", "std", "min", "max", "paper (Twitter)"], table)
    plot_efficiency(sorted(glob.glob(os.path.join(OUT, "efficiency_*.csv"))),
                    os.path.join(OUT, "efficiency.png"))
    print("\n".join(",".join(str(c) for c in t) for t in table))


def plot_efficiency(csv_paths, png):
    """All measured curves (mean +- std over seeds) with the paper's two published points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for path in csv_paths:
        with open(path) as handle:
            rows = list(csv.DictReader(handle))
        label = os.path.basename(path)[len("efficiency_"):-4].replace("_search", ", settings searched")
        label = label.replace("_", ", preset ")
        ax.errorbar([float(r["percent"]) for r in rows], [float(r["mean spearman"]) for r in rows],
                    yerr=[float(r["std"]) for r in rows], marker="o", capsize=3,
                    label=f"ADEM ({label}), {rows[0]['seeds']} seeds")
    ax.plot(list(PAPER_EFFICIENCY), list(PAPER_EFFICIENCY.values()), "s", color="grey", markersize=8,
            label="paper, Twitter data (5% and 100%)")
    ax.set_xlabel("% of the in-domain training split")
    ax.set_ylabel("test Spearman (in-domain test split)")
    ax.set_title("ADEM data efficiency")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def cmd_plot(args):
    plot_efficiency(sorted(glob.glob(os.path.join(OUT, "efficiency_*.csv"))), os.path.join(OUT, "efficiency.png"))


# -- speed and size -------------------------------------------------------------------------

def cmd_speed(args):
    """Scoring throughput (responses/s) of the metric from a saved model, cold (texts not yet
    encoded) beside BLEU-2 in the same process; and artifact sizes."""
    from dialeval.metrics.base import Batch
    from dialeval.metrics.learned.adem.data import load_rated_set
    from dialeval.metrics.registry import build_metric

    from adem_common import DATA

    rows = load_rated_set("grade-convai2", os.path.join(DATA, "grade"))[: args.n]
    batch = Batch([r.response for r in rows], [r.references for r in rows], [r.context for r in rows])
    out = {}
    t0 = time.time()
    build_metric("bleu2").compute(batch)
    out["bleu2_seconds"] = time.time() - t0
    for spec, folder in [("minilm", args.minilm_model)] + ([("hred", args.hred_model)] if args.hred_model else []) \
            + ([("minilm-finetuned", args.tuned_model)] if args.tuned_model else []):
        metric = build_metric("adem", adem_model=folder)
        if args.warm:   # load the model and the libraries first, on texts of another set
            w = load_rated_set("grade-dailydialog", os.path.join(DATA, "grade"))[:4]
            metric.compute(Batch([r.response for r in w], [r.references for r in w], [r.context for r in w]))
        t0 = time.time()
        metric.compute(batch)
        dt = time.time() - t0
        size = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(folder) for f in files)
        out[spec] = {"responses": len(rows), "seconds": round(dt, 2), "responses_per_s": round(len(rows) / dt, 2),
                     "ratio_to_bleu2": round(dt / max(out["bleu2_seconds"], 1e-9), 1), "adem_folder_bytes": size}
        log(f"{spec}: {out[spec]}")
    with open(os.path.join(OUT, args.out), "w") as handle:
        json.dump(out, handle, indent=1)
    print(json.dumps(out, indent=1))


def cmd_perplexity(args):
    """Next-utterance perplexity of a trained dialogue encoder on a corpus (e.g. DailyDialog test)."""
    from dialeval.data.corpus import read_corpus_spec
    from dialeval.metrics.learned.adem.hred import DialogueEncoder

    import torch

    torch.set_num_threads(args.threads)
    enc = DialogueEncoder.load(args.encoder)
    t0 = time.time()
    out = enc.perplexity(read_corpus_spec(args.corpus))
    out["seconds"] = round(time.time() - t0, 1)
    out["encoder"] = {k: v for k, v in enc.training_.items() if k not in ("log", "eval")}
    with open(os.path.join(OUT, "hred_perplexity.json"), "w") as handle:
        json.dump(out, handle, indent=1)
    print(json.dumps(out))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("main")
    a.add_argument("--hred")
    a.add_argument("--n-boot", type=int, default=1000)
    a.add_argument("--save-dir", default="models", help="save the in-domain ADEM models here (adem-minilm, ...)")
    a.set_defaults(func=cmd_main)
    a = sub.add_parser("finetune", help="ADEM (minilm) with its top MiniLM layers fine-tuned (stage 2)")
    a.add_argument("--finetune-layers", type=int, default=1)
    a.add_argument("--finetune-lr", type=float, default=1e-4)
    a.add_argument("--finetune-epochs", type=int, default=1)
    a.add_argument("--max-minutes", type=float, help="stage-2 time cap per fit")
    a.add_argument("--stage1-settings", help="main_timing_*.json whose recorded search results stage 1 refits")
    a.add_argument("--only", action="append", help="run only this setting (repeatable)")
    a.add_argument("--redo", action="store_true", help="recompute settings already written")
    a.add_argument("--n-boot", type=int, default=1000)
    a.add_argument("--save-dir", default="models", help="save the in-domain fine-tuned model here")
    a.set_defaults(func=cmd_finetune)
    a = sub.add_parser("perset")
    a.add_argument("--hred")
    a.add_argument("--n-boot", type=int, default=1000)
    a.set_defaults(func=cmd_perset)
    a = sub.add_parser("loso")
    a.add_argument("--encoder", default="minilm")
    a.add_argument("--n-boot", type=int, default=1000)
    a.set_defaults(func=cmd_loso)
    a = sub.add_parser("efficiency")
    a.add_argument("--encoder", default="minilm")
    a.add_argument("--seeds", type=int, default=10)
    a.set_defaults(func=cmd_efficiency)
    a = sub.add_parser("perplexity")
    a.add_argument("--encoder", required=True)
    a.add_argument("--corpus", default=os.path.join(DATA_DIR, "dailydialog", "test.zip"))
    a.add_argument("--threads", type=int, default=1)
    a.set_defaults(func=cmd_perplexity)
    a = sub.add_parser("plot")
    a.set_defaults(func=cmd_plot)
    a = sub.add_parser("speed")
    a.add_argument("--minilm-model", required=True)
    a.add_argument("--hred-model")
    a.add_argument("--n", type=int, default=200)
    a.add_argument("--tuned-model", help="a fine-tuned ADEM folder (bench_adem.py finetune), timed beside the others")
    a.add_argument("--warm", action="store_true",
                   help="load each model (and torch) on 4 other rows before timing, so that only encoding is timed")
    a.add_argument("--out", default="speed.json", help="file name under benchmarks/out/adem_results/ (default speed.json)")
    a.set_defaults(func=cmd_speed)
    p.add_argument("--preset", default="paper", choices=["paper", "released"],
                   help="ADEM preset for every fit (outputs are suffixed with it)")
    p.add_argument("--search", action="store_true",
                   help="every fit chooses PCA size and lr on its validation split (SEARCH_GRID); outputs "
                        "are suffixed PRESET_search")
    args = p.parse_args(argv)
    global PRESET, SEARCH, LABEL
    PRESET, SEARCH = args.preset, args.search
    LABEL = PRESET + ("_search" if SEARCH else "")
    args.func(args)


if __name__ == "__main__":
    main()
