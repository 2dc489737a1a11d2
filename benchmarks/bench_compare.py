"""`dialeval compare` against sacreBLEU's own paired bootstrap on DSTC6 (20 systems, 2,000
turns, 11 references), BLEU-4, baseline S_1, 1,000 resamples, seed 12345.

sacreBLEU is used here only (pip install sacrebleu), never at run time. Three comparisons:

1. corpus BLEU-4: dialeval (pycocoevalcap rules) x 100 against sacreBLEU `tokenize="none"` on the
   same whitespace-tokenised text (same clipped counts and closest reference length; they
   differ in coco's 1e-15/1e-9 floors and brevity rule, and sacreBLEU's `exp` smoothing);
2. the whole paired test as each tool runs it on its own statistics: bootstrap mean, 95% CI
   (sacreBLEU prints mean +- half-width), p-value against S_1;
3. the resampling procedure alone: dialeval's `resample_counts` / `estimate_ci` /
   `paired_bootstrap_p` fed with sacreBLEU's statistics and sacreBLEU's score function must
   give sacreBLEU's numbers exactly.

Times the two paired tests side by side in this process (ratio = sacreBLEU / dialeval).

    python3 benchmarks/bench_compare.py [--data ../shared/data/dstc6-eval] [--systems 20]
        [--json benchmarks/out/report_results/compare_dstc6.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                   "data", "dstc6-eval"))
    ap.add_argument("--systems", type=int, default=20)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--ar-systems", type=int, default=5,
                    help="also check approximate randomization on the first N systems (0: skip)")
    ap.add_argument("--ar-n", type=int, default=2000, help="AR trials for that check")
    args = ap.parse_args()
    os.environ["SACREBLEU_SEED"] = str(args.seed)
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    from dialeval.data.datasets import load_dataset
    from dialeval.meta import systems as S
    from dialeval.scoring import score

    ds = load_dataset("dstc6", args.data, systems=args.systems)
    names = list(dict.fromkeys(s.system for s in ds.samples))
    hyps = {n: [s.response for s in ds.samples if s.system == n] for n in names}
    first = [s for s in ds.samples if s.system == names[0]]
    ref_streams = [[s.references[k] for s in first] for k in range(len(first[0].references))]

    # -- dialeval ---------------------------------------------------------------------------------
    t0 = time.perf_counter()
    result = score(ds.samples, ["bleu4"])
    t1 = time.perf_counter()
    rows = S.score_rows(result)
    t2 = time.perf_counter()
    ours = S.compare_systems(rows, baseline=names[0], test="bs", n_resamples=args.n, seed=args.seed)
    t3 = time.perf_counter()
    mine = {r["system"]: r for r in ours.rows if r["measure"] == "bleu4"}

    # -- sacreBLEU --------------------------------------------------------------------------------
    bleu = BLEU(tokenize="none")
    t4 = time.perf_counter()
    test = PairedTest([(n, hyps[n]) for n in names], {"BLEU": bleu}, references=ref_streams,
                      test_type="bs", n_samples=args.n)
    sigs, res = test()
    t5 = time.perf_counter()
    theirs = dict(zip(res["System"], res["BLEU"]))
    print(f"sacreBLEU signature: {sigs['BLEU']}")
    print(f"dialeval signature:  {ours.signature} + {result.signatures['bleu4']}")
    print()

    # -- 3. the procedure on sacreBLEU's own statistics ---------------------------------------------
    stats = {n: np.array(bleu._extract_corpus_statistics(hyps[n], ref_streams), dtype="float32")
             for n in names}
    counts = S.resample_counts(len(first), args.n, args.seed)

    def reduce(total):
        return np.array([bleu._compute_score_from_stats(list(row)).score for row in total])

    procedure = {}
    base = reduce(counts @ stats[names[0]].astype(np.float64))
    for n in names:
        boot = reduce(counts @ stats[n].astype(np.float64))
        mean, low, high = S.estimate_ci(boot)
        real = bleu._compute_score_from_stats(list(stats[n].sum(0))).score
        real_base = bleu._compute_score_from_stats(list(stats[names[0]].sum(0))).score
        p = None if n == names[0] else S.paired_bootstrap_p(base, boot, real - real_base)
        procedure[n] = {"mean": mean, "ci": 0.5 * (high - low), "p": p}

    header = (f"{'system':6s} {'dialeval':>9s} {'sacreBLEU':>9s} {'ours mean±ci':>14s} "
              f"{'sacre mean±ci':>14s} {'p ours':>7s} {'p sacre':>7s} {'p proc.':>7s}")
    print(header)
    table = []
    max_bleu = max_p = max_proc_p = max_proc_ci = 0.0
    for n in names:
        m, t = mine[n], theirs[n]
        ours_ci = 50 * (m["ci_high"] - m["ci_low"])
        row = {"system": n, "bleu_dialeval": 100 * m["score"], "bleu_sacrebleu": t.score,
               "mean_dialeval": 100 * m["bs_mean"], "ci_dialeval": ours_ci,
               "ci_low_dialeval": 100 * m["ci_low"], "ci_high_dialeval": 100 * m["ci_high"],
               "mean_sacrebleu": t.mean, "ci_sacrebleu": t.ci, "p_dialeval": m.get("p"),
               "p_sacrebleu": t.p_value, "p_procedure_on_sacrebleu_stats": procedure[n]["p"],
               "mean_procedure": procedure[n]["mean"], "ci_procedure": procedure[n]["ci"]}
        table.append(row)
        max_bleu = max(max_bleu, abs(row["bleu_dialeval"] - row["bleu_sacrebleu"]))
        if t.p_value is not None:
            max_p = max(max_p, abs(m["p"] - t.p_value))
            max_proc_p = max(max_proc_p, abs(procedure[n]["p"] - t.p_value))
        max_proc_ci = max(max_proc_ci, abs(procedure[n]["ci"] - t.ci), abs(procedure[n]["mean"] - t.mean))
        fp = lambda v: "   -   " if v is None else f"{v:7.4f}"  # noqa: E731
        print(f"{n:6s} {row['bleu_dialeval']:9.4f} {t.score:9.4f} "
              f"{row['mean_dialeval']:7.2f}±{ours_ci:5.2f} {t.mean:7.2f}±{t.ci:5.2f} "
              f"{fp(m.get('p'))} {fp(t.p_value)} {fp(procedure[n]['p'])}")
    print()
    print(f"max |BLEU dialeval - sacreBLEU| = {max_bleu:.2e} (BLEU x 100)")
    print(f"max |p dialeval - p sacreBLEU|  = {max_p:.4f} (each on its own statistics)")
    print(f"procedure on sacreBLEU's statistics: max |p diff| = {max_proc_p:.2e}, "
          f"max |mean/ci diff| = {max_proc_ci:.2e}")
    same_sig = sum(1 for r in table if r["p_sacrebleu"] is not None and
                   (r["p_dialeval"] < 0.05) == (r["p_sacrebleu"] < 0.05))
    print(f"systems with the same verdict at p < 0.05: {same_sig}/{len(names) - 1}")
    print()
    print(f"time: dialeval scoring {t1 - t0:.2f} s, rows {t2 - t1:.2f} s, paired test {t3 - t2:.2f} s; "
          f"sacreBLEU statistics + paired test {t5 - t4:.2f} s; "
          f"ratio (sacreBLEU / dialeval, whole) {(t5 - t4) / (t3 - t0):.2f}x, "
          f"(sacreBLEU whole / dialeval test alone) {(t5 - t4) / (t3 - t2):.2f}x")
    ar = []
    if args.ar_systems > 1:
        subset = names[:args.ar_systems]
        sub_rows = [r for r in rows if r["system"] in subset]
        t6 = time.perf_counter()
        ours_ar = S.compare_systems(sub_rows, baseline=names[0], test="ar", n_resamples=args.ar_n,
                                    seed=args.seed)
        t7 = time.perf_counter()
        test = PairedTest([(n, hyps[n]) for n in subset], {"BLEU": BLEU(tokenize="none")},
                          references=ref_streams, test_type="ar", n_samples=args.ar_n)
        _, res_ar = test()
        t8 = time.perf_counter()
        mine_ar = {r["system"]: r.get("p") for r in ours_ar.rows if r["measure"] == "bleu4"}
        print()
        print(f"approximate randomization, {args.ar_n} trials, seed {args.seed}, vs {names[0]}:")
        for n, t in zip(res_ar["System"], res_ar["BLEU"]):
            if t.p_value is not None:
                ar.append({"system": n, "p_dialeval": mine_ar[n], "p_sacrebleu": t.p_value})
                print(f"  {n:6s} p dialeval {mine_ar[n]:.4f}  p sacreBLEU {t.p_value:.4f}")
        print(f"  max |p diff| = {max(abs(a['p_dialeval'] - a['p_sacrebleu']) for a in ar):.2e}; "
              f"time dialeval {t7 - t6:.2f} s, sacreBLEU {t8 - t7:.2f} s "
              f"(ratio {(t8 - t7) / (t7 - t6):.1f}x)")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"signature": ours.signature, "sacrebleu_signature": str(sigs["BLEU"]),
                       "rows": table, "max_bleu_diff": max_bleu, "max_p_diff": max_p,
                       "max_procedure_p_diff": max_proc_p, "max_procedure_ci_diff": max_proc_ci,
                       "approximate_randomization": ar,
                       "times": {"dialeval_score": t1 - t0, "dialeval_test": t3 - t2,
                                 "sacrebleu": t5 - t4}}, f, indent=1)


if __name__ == "__main__":
    main()
