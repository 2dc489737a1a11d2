"""Turn-level Pearson of lm_coherence / lm_fluency (raw and normalised) with the holistic
paper's coherence and fluency ratings (mean of ten raters), per model.

    python3 benchmarks/lm_holistic.py MODEL [MODEL ...] [--data $DATA/holistic-eval]

MODEL: a causal-LM folder, GGUF file or LoRA adapter folder; `name=path` names the row.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy.stats import pearsonr, spearmanr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--data", default=os.path.join(os.environ.get("DATA", "../shared/data"), "holistic-eval"))
    ap.add_argument("--layout", default=None, help="override the model's layout (plain|chat)")
    ap.add_argument("--batch-size", type=int, default=1)
    args = ap.parse_args()
    from dialeval.data.datasets import load_dataset
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs
    from dialeval.metrics.lm.metric import normalise

    coh = load_dataset("holistic-coherence", args.data)
    flu = load_dataset("holistic-fluency", args.data)
    print("model | coherence raw r | coherence norm r | coherence raw rho | fluency raw r | fluency norm r | fluency raw rho | seconds")
    for spec in args.models:
        name, _, path = spec.rpartition("=")
        name = name or path
        t = time.time()
        lm = load_lm(path)
        if args.layout:
            lm.layout, lm._frame = args.layout, None
        row = []
        for ds, kind in ((coh, "coherence"), (flu, "fluency")):
            hyps = [s.response for s in ds.samples]
            human = np.array([np.mean(s.ratings[kind]) for s in ds.samples])
            queries = [s.context[-1] for s in ds.samples] if kind == "coherence" else None
            raw = mean_logprobs(lm, hyps, queries, args.batch_size)
            ok = ~np.isnan(raw)
            row.append(f"{pearsonr(raw[ok], human[ok])[0]:.3f}")
            ref = lm.reference.get(f"{kind}_raw")
            if ref is not None and len(ref):
                norm = normalise(raw, float(np.percentile(ref, 5.0)))
                row.append(f"{pearsonr(norm[ok], human[ok])[0]:.3f}")
            else:
                row.append("n/a")
            row.append(f"(rho {spearmanr(raw[ok], human[ok])[0]:.3f})")
        print(f"{name} | " + " | ".join(row) + f" | {time.time() - t:.0f}", flush=True)


if __name__ == "__main__":
    main()
