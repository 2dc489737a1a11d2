"""Leave-one-dataset-out (LODO) comparison of ADEM training recipes against sent_cosine.

For each of the seven rated sets with references, ADEM is trained on the other six (their own
85/15 validation split by context picks PCA size and lr, as `train adem --search`) and scored on
the whole left-out set; nothing of the left-out set takes part in training or in the choice of
settings. Recipes differ only in the options of `Adem` (ranking loss, per-set standardisation,
uncentred start from the cosine, backbone). Vectors come from the on-disk cache of
`adem_common.py`, so a recipe costs only the fits.

    python3 benchmarks/bench_adem_lodo.py --encoder minilm --recipes old,rank,std,cos,cos_std_rank
    python3 benchmarks/bench_adem_lodo.py --encoder minilm:$HOME/.cache/dialeval/pretrained/all-mpnet-base-v2 ...
    python3 benchmarks/bench_adem_lodo.py --variant c_adem --recipes old,cos_std_rank --suffix _search
    python3 benchmarks/bench_adem_lodo.py --table          # markdown from every stored run

Predictions go to benchmarks/out/adem_lodo/ (one .npz per encoder and recipe; rerunning a recipe
that is already there only rebuilds the table); the table to benchmarks/out/adem_lodo/table.md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adem_common import encode_pool, pool, vectors  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "adem_lodo")
SETS = ("usr-tc", "usr-pc", "grade-dailydialog", "grade-convai2", "grade-empatheticdialogues", "gupta",
        "predictive-engagement")
BASE = {"preset": "released"}
RECIPES = {
    "old": {},                                              # the shipped default's recipe
    "rank": {"rank_weight": 1.0},
    "std": {"standardise": True},
    "std_rank": {"standardise": True, "rank_weight": 1.0},
    "cos": {"centre": False},
    "cos_rank": {"centre": False, "rank_weight": 1.0},
    "cos_std": {"centre": False, "standardise": True},
    "cos_std_rank": {"centre": False, "standardise": True, "rank_weight": 1.0},
    # the shipped recipe with the probe families parrot, generic and other_item as training
    # negatives (each training row's variants at the bottom of the scale); empty, punct,
    # shuffle, loop, truncate and script stay out of training
    "cos_std_rank_neg": {"centre": False, "standardise": True, "rank_weight": 1.0,
                         "hard_negatives": "parrot,generic,other_item"},
    # the shipped recipe with the copy term (adem/copy.py): weight and knee chosen on the fold's
    # validation rows beside a copy of each one's last turn
    "cos_std_rank_copy": {"centre": False, "standardise": True, "rank_weight": 1.0, "copy_term": True},
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def short(spec):
    return "mpnet" if "mpnet" in spec else spec.split(":")[0]


def sent_cosine(rows, txt):
    out = np.full(len(rows), np.nan)
    for j, r in enumerate(rows):
        h = txt[r.response]
        out[j] = max(float(h @ txt[t]) / (np.linalg.norm(h) * np.linalg.norm(txt[t]) + 1e-12) for t in r.references)
    return out


def speed(specs, n):
    """Samples/s of ADEM scoring's dominant step, encoding each sample's context, response and
    references with the backbone (fresh texts, one process, encoders side by side)."""
    from dialeval.metrics.learned.adem.encoders import make_encoder

    rows = [r for r in pool() if r.dataset == "grade-convai2" and r.references][:n]
    out = {}
    for spec in specs:
        enc = make_encoder(spec, 3)
        enc.encode_texts(["warm up"])
        started = time.perf_counter()
        enc.encode_contexts([r.context for r in rows])
        enc.encode_texts([r.response for r in rows] + [t for r in rows for t in r.references])
        out[short(spec)] = len(rows) / (time.perf_counter() - started)
        log(f"{short(spec)}: {out[short(spec)]:.1f} samples/s")
    base = out[short(specs[0])]
    for k, v in out.items():
        print(f"| {k} | {v:.1f} | {v / base:.2f}x |")


def run(spec, recipes, grid, suffix="", variant="adem"):
    from dialeval.metrics.learned.adem.data import split_by_context
    from dialeval.metrics.learned.adem.model import Adem

    from dialeval.metrics.learned.adem import copy
    from dialeval.metrics.learned.adem.copy import overlap
    from dialeval.metrics.learned.adem.model import negative_rows

    rows = [r for r in pool() if r.references]
    n_real = len(rows)
    ctx, txt, k = encode_pool(rows, spec, log=log)
    C, R, H = vectors(rows, ctx, txt, k)
    y = np.array([r.score for r in rows])
    lengths = np.array([len(r.response.split()) for r in rows])
    groups = np.array([r.dataset for r in rows])

    def with_negatives(tr, families):
        """The fold's training arrays plus the negatives made from its training rows only (an
        other_item variant then never carries a held-out set's response into training)."""
        negs = negative_rows([rows[i] for i in tr], families, seed=0)
        nctx, ntxt, _ = encode_pool(rows + negs, spec, log=log)
        nC, nR, nH = vectors(negs, nctx, ntxt, k)
        ny = np.array([r.score for r in negs])
        nl = np.array([len(r.response.split()) for r in negs])
        ng = np.array([r.dataset for r in negs])
        return (np.concatenate([C[tr], nC]), np.concatenate([R[tr], nR]), np.concatenate([H[tr], nH]),
                np.concatenate([y[tr], ny]), np.concatenate([lengths[tr], nl]), np.concatenate([groups[tr], ng]))
    def fit_copy(m, va):
        """`Adem.fit_copy_term` on vectors: the fold's validation rows with a context, and a
        copy of each one's last turn (encoded through the same cache)."""
        made = {p.id: p for p in negative_rows([rows[i] for i in va if rows[i].context], "parrot", seed=0)}
        va = np.array([i for i in va if f"{rows[i].id}:parrot" in made])
        parrots = [made[f"{rows[i].id}:parrot"] for i in va]
        pctx, ptxt, _ = encode_pool(rows + parrots, spec, log=log)
        pC, pR, pH = vectors(parrots, pctx, ptxt, k)
        ctx = [rows[i].context for i in va]
        # predict_vectors without copy= scores without the term (the fit has none yet)
        m.set_copy_term(copy.choose(m.predict_vectors(C[va], R[va], H[va]), overlap(ctx, [rows[i].response for i in va]),
                                    y[va], groups[va], m.predict_vectors(pC, pR, pH),
                                    overlap(ctx, [p.response for p in parrots])))

    os.makedirs(OUT, exist_ok=True)
    base_path = os.path.join(OUT, f"{short(spec)}__sent_cosine.npz")
    np.savez(base_path, pred=sent_cosine(rows, txt), y=y, groups=groups)
    prefix = "" if variant == "adem" else f"{variant}:"
    for name in recipes:
        path = os.path.join(OUT, f"{short(spec)}__{prefix}{name}{suffix}.npz")
        if os.path.exists(path):
            log(f"{path} exists; skipped")
            continue
        pred = np.full(n_real, np.nan)
        info = {}
        started = time.process_time()
        recipe = dict(RECIPES[name])
        used = set((recipe.pop("hard_negatives", "") or "").split(",")) - {""}
        for held in SETS:
            test = np.flatnonzero(groups == held)
            rest = np.flatnonzero(groups != held)
            parts = split_by_context([rows[i] for i in rest], [0.85, 0.15], seed=0)
            tr, va = rest[parts[0]], rest[parts[1]]
            train = (with_negatives(tr, ",".join(sorted(used))) if used else
                     (C[tr], R[tr], H[tr], y[tr], lengths[tr], groups[tr]))
            m = Adem(encoder=spec, variant=variant, seed=0, **BASE, **recipe)
            m.search_vectors(grid, *train, val=(C[va], R[va], H[va], y[va]))
            held_copy = None
            if m.copy_term:
                fit_copy(m, va)
                held_copy = overlap([rows[i].context for i in test], [rows[i].response for i in test])
            pred[test] = m.predict_vectors(C[test], R[test], H[test], copy=held_copy)
            info[held] = {"pca_dims": m.pca_dims, "lr": m.lr, "val_spearman": m.training_["val_spearman"],
                          "best_epoch": m.training_["best_epoch"],
                          **({"copy_term": {k: v for k, v in m.training_["copy_term"].items() if k != "grid"}}
                             if m.copy_term else {})}
            log(f"{short(spec)} {name} held out {held}: {info[held]}")
        cpu = time.process_time() - started
        np.savez(path, pred=pred, y=y, groups=groups, info=json.dumps({"settings": info, "cpu_s": cpu}))


def table(n_boot, seed=0):
    from dialeval.meta.compose_eval import HeldOut, paired_mean_difference
    from dialeval.meta.correlation import correlate

    runs = {}
    for path in sorted(glob.glob(os.path.join(OUT, "*.npz"))):
        label = os.path.basename(path)[:-4]
        with np.load(path, allow_pickle=False) as z:
            runs[label] = (z["pred"], z["y"], z["groups"], json.loads(str(z["info"])) if "info" in z else {})
    held = {}
    lines = ["Leave-one-dataset-out turn-level Spearman [95% bootstrap CI] with the (1-5 mapped) human score: "
             "trained on six rated sets, scored on the whole seventh.", "",
             "| method | " + " | ".join(SETS) + " | mean | fit CPU s (7 folds) |",
             "|---|" + "---|" * (len(SETS) + 2)]
    for label, (pred, y, groups, info) in runs.items():
        cells, rs = [], []
        for s in SETS:
            sel = groups == s
            c = correlate(pred[sel], y[sel], methods=["spearman"], n_boot=n_boot, seed=seed)[0]
            held.setdefault(label, []).append(HeldOut(s, "q", label, c.r, c.n, False, pred[sel], y[sel]))
            rs.append(c.r)
            cells.append(f"{c.r:.3f} [{c.ci_low:.2f}, {c.ci_high:.2f}]")
        cpu = info.get("cpu_s")
        lines.append(f"| {label.replace('__', ' ')} | " + " | ".join(cells) + f" | **{np.mean(rs):.4f}** | "
                     + (f"{cpu:.0f}" if cpu is not None else "") + " |")
    lines += ["", "Paired bootstrap over items within each left-out set (`meta.compose_eval.paired_mean_difference`, "
              f"{n_boot} resamples): mean over the 7 sets of r(A) - r(B), 95% CI, one-sided p = share of resamples "
              "with a mean difference <= 0, sets where A wins.", "",
              "| A | B | mean difference | 95% CI | p | wins |", "|---|---|---|---|---|---|"]
    for a in runs:
        enc, name = a.split("__")
        if name == "sent_cosine":
            continue
        prefix, _, name = name.rpartition(":")          # c_adem:old, r_adem:cos_std_rank ...
        prefix = prefix + ":" if prefix else ""
        old = (f"{enc}__{prefix}old_search" if f"{enc}__{prefix}old_search" in runs
               else f"{enc}__{prefix}old")
        # and a recipe that adds one thing (cos_std_rank_copy) against the one without it
        parent = f"{enc}__{prefix}{name.rsplit('_', 1)[0]}" if "_" in name else None
        for b in (f"{enc}__sent_cosine", old, parent):
            if b is None or b not in runs or name.startswith("old") or b == a:
                continue
            d = paired_mean_difference(held[a] + held[b], a, b, n_boot=n_boot, seed=seed)
            lines.append(f"| {a.replace('__', ' ')} | {b.replace('__', ' ')} | {d.mean_diff:+.4f} | "
                         f"[{d.ci_low:+.3f}, {d.ci_high:+.3f}] | "
                         + (f"< {1 / n_boot:g}" if d.p == 0 else f"{d.p:.4f}") + f" | {d.wins}/{d.pairs} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(OUT, "table.md"), "w") as handle:
        handle.write(text)
    print(text)
    for label, (*_, info) in runs.items():
        if info:
            log(f"{label}: {json.dumps(info['settings'])}")


def main(argv=None):
    from dialeval.metrics.learned.adem.model import SEARCH_GRID

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--recipes", default="old")
    ap.add_argument("--lr", default=None, help="comma-separated lr grid (default: SEARCH_GRID's)")
    ap.add_argument("--pca", default=None, help="comma-separated PCA grid (default: SEARCH_GRID's; 0 = all)")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--suffix", default="", help="added to the stored run's name (e.g. _search)")
    ap.add_argument("--variant", default="adem", choices=["adem", "c_adem", "r_adem"],
                    help="which ADEM: both halves, context only or reference only (runs are named variant:recipe)")
    ap.add_argument("--speed", type=int, default=0, help="time encoding N samples with --encoder (comma-separated)")
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args(argv)
    if args.table:
        return table(args.n_boot)
    if args.speed:
        return speed(args.encoder.split(","), args.speed)
    grid = dict(SEARCH_GRID)
    if args.lr:
        grid["lr"] = [float(v) for v in args.lr.split(",")]
    if args.pca:
        grid["pca_dims"] = [int(v) for v in args.pca.split(",")]
    run(args.encoder, [r for r in args.recipes.split(",") if r], grid, args.suffix, args.variant)


if __name__ == "__main__":
    main()
