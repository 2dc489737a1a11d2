"""Validation-only check for ADEM's fine-tuned variant: on the in-domain split (the pooled rated
sets split by context 70/15/15, seed 0), stage 1 is refitted with the settings the frozen
search chose there (recorded in benchmarks/out/adem_results/main_timing_released_search.json), then stage 2
is run once per (layers, finetune_lr) given, and the validation Spearman of stage 1 and of
stage 2 (four checks per epoch) is printed. Only the validation split is read: the defaults of
`finetune_layers`/`finetune_lr`/`finetune_epochs` were chosen from this output, never from a
test or held-out set.

    nice -n 10 python3 -u benchmarks/adem_ft_valcheck.py 1:3e-5 1:1e-4 [--epochs 1]
"""

import argparse
import json
import os
import sys
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_adem as B  # noqa: E402
from adem_common import pool  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="LAYERS:LR, e.g. 1:1e-4")
    p.add_argument("--epochs", type=int, default=1)
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)
    B.PRESET, B.LABEL = "released", "released_search"
    stage1 = os.path.join(B.OUT, "main_timing_released_search.json")
    if not os.path.exists(stage1):
        sys.exit(f"{stage1} missing: run `python3 benchmarks/bench_adem.py --preset released --search main` first "
                 "(it writes the settings chosen on validation there)")
    with open(stage1) as handle:
        chosen = json.load(handle)["settings (pca_dims 0: all)"][f"{B.IN_DOMAIN} | minilm"]
    rows = pool()
    vm = B.Vectors(rows, "minilm")
    tr, va, _ = B.splits(rows)       # the test part is never touched here
    for run in args.runs:
        layers, lr = run.split(":")
        m = B.fit("adem", vm, rows, tr, va, pca_dims=chosen["pca_dims"], lr=chosen["lr"])
        m.set_params(finetune_layers=int(layers), finetune_epochs=args.epochs, finetune_lr=float(lr))
        t0 = time.process_time()
        m.finetune_rows(rows, tr, va, progress=print)
        info = m.training_["finetune"]
        print("RESULT", json.dumps({"layers": int(layers), "finetune_lr": float(lr), "epochs": args.epochs,
                                    "val_stage1": info["val_spearman_stage1"], "val_stage2": info["val_spearman"],
                                    "curve": info["curve"], "cpu_s": round(time.process_time() - t0, 1),
                                    "wall_s": info["seconds"]}), flush=True)


if __name__ == "__main__":
    main()
