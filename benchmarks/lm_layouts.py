"""Which frame and casing suit a causal LM on DailyDialog: mean log-probability per response
token of DailyDialog VALIDATION pairs (never the rated sets), per layout and casing.

    python3 benchmarks/lm_layouts.py [--model DIR] [--pairs 400]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None, help="causal LM folder, GGUF or adapter (default: prepared SmolLM2)")
    ap.add_argument("--validation", default="../shared/data/dailydialog/validation.zip")
    ap.add_argument("--pairs", type=int, default=400)
    ap.add_argument("--layouts", default="plain,chat")
    ap.add_argument("--casings", default="as-is", help="as-is,lower")
    ap.add_argument("--batch-size", type=int, default=1)
    args = ap.parse_args()
    from dialeval.data.corpus import pairs, read_corpus
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import mean_logprobs

    model = args.model
    if model is None:
        from dialeval.models.pretrained import smollm2_135m

        model = str(smollm2_135m())
    all_pairs = pairs(read_corpus(args.validation))
    random.Random(0).shuffle(all_pairs)
    sample = all_pairs[: args.pairs]
    lm = load_lm(model)
    print(f"model {model}; {len(sample)} DailyDialog validation pairs")
    print("layout  casing  coherence_raw  fluency_raw  seconds")
    for layout in args.layouts.split(","):
        for lower in [c == "lower" for c in args.casings.split(",")]:
            lm.layout, lm.lowercase, lm._frame = layout, lower, None
            t = time.time()
            coh = mean_logprobs(lm, [r for _, r in sample], [q for q, _ in sample], batch_size=args.batch_size)
            flu = mean_logprobs(lm, [r for _, r in sample], None, batch_size=args.batch_size)
            print(f"{layout:7s} {'lower' if lower else 'as-is':6s}  {np.nanmean(coh):13.4f}  {np.nanmean(flu):11.4f}"
                  f"  {time.time() - t:7.1f}", flush=True)


if __name__ == "__main__":
    main()
