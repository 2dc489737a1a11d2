"""Does unlikelihood training against degenerate replies cost the LM metrics their agreement with people?

`lm_coherence` and `lm_fluency` train on DailyDialog text alone and never on a rated set, so
every rated set is unseen to both the shipped adapter and a candidate (`train lm --lora
--negatives ...`). For each local rated set: Spearman of each adapter's columns with the set's
main quality, its 95% bootstrap CI, and the paired difference candidate - shipped (bootstrap
over items, averaged over sets).

    python3 benchmarks/lm_negatives_lodo.py --data-root $DATA --candidate DIR [--out DIR]

The shipped adapter's columns are shared with rm_cross_lodo.py's `--extra` cache; the
candidate's are cached under OUT/scores. Writes OUT/lm_negatives_lodo.md and .json.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from negatives_lodo import (cached_columns, dev_set, held_out_tables, log, rated_samples,  # noqa: E402
                            write_report)

LM = ["lm_coherence", "lm_fluency"]


def main() -> None:
    from bench_compose import SETS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--candidate", required=True, help="an LM adapter folder trained with --negatives")
    ap.add_argument("--shipped-cache", default=os.path.join(HERE, "out", "rm_cross_lodo", "scores_extra"),
                    help="cached columns of the shipped adapter")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "lm_negatives_lodo"))
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()

    devs = []
    for name in SETS:
        log(name)
        samples = rated_samples(name, args.data_root)
        cols = cached_columns(os.path.join(args.shipped_cache, f"{name}.npz"), samples, LM, {})
        new = cached_columns(os.path.join(args.out, "scores", f"{name}.npz"), samples, LM,
                             {"lm_model": args.candidate})
        cols.update({f"{m} (unlikelihood)": v for m, v in new.items()})
        dev = dev_set(name, samples, cols)
        devs.append(dev)

    labels = [m for m in LM] + [f"{m} (unlikelihood)" for m in LM]
    preds = {label: {d.name: d.scores[label] for d in devs if np.isfinite(d.scores[label]).any()}
             for label in labels}
    pairs = [(f"{m} (unlikelihood)", m) for m in LM]
    table, diffs, lines = held_out_tables(preds, devs, pairs, args.n_boot)
    write_report(args.out, "lm_negatives_lodo", lines,
                 {"rows": table, "differences": diffs, "candidate": args.candidate})


if __name__ == "__main__":
    main()
