"""BERTScore's rescaling baselines, computed on DailyDialog, into the tracked
src/dialeval/metrics/embedding/bertscore_baselines.json.

bert-score's own baselines are the mean P, R and F of random pairs of unrelated Common Crawl
sentences, per layer of each hub model. We have neither the hub nor its corpus, so we do the same
with utterances of DailyDialog's test split (public: docs/datasets.md) for each packaged encoder,
at every layer, in one forward pass per text. The file records the corpus, pair count and seed.

    python3 benchmarks/bertscore_baselines.py --data-root $DATA [--models minilm,mpnet] [--pairs 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))


def main() -> None:
    from dialeval.data.corpus import read_corpus
    from dialeval.metrics.embedding.bertscore import BASELINE_FILE, baseline, load_baselines, resolve_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA", "../shared/data"))
    ap.add_argument("--models", default="minilm,mpnet")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    corpus = os.path.join(args.data_root, "dailydialog", "test.zip")
    sentences = [u for dialogue in read_corpus(corpus) for u in dialogue]
    table = load_baselines()
    for name in args.models.split(","):
        folder, label = resolve_model(name)
        started = time.process_time()
        layers = baseline(folder, sentences, pairs=args.pairs, seed=args.seed)
        table[label] = {"corpus": "DailyDialog test (dailydialog/test.zip), utterances",
                        "pairs": args.pairs, "seed": args.seed, "columns": ["P", "R", "F"], "layers": layers}
        print(f"{label}: {len(layers)} layers, {time.process_time() - started:.1f} CPU s")
        for layer, values in layers.items():
            print(f"  layer {layer:>2}: P {values[0]:.4f}  R {values[1]:.4f}  F {values[2]:.4f}")
    with open(BASELINE_FILE, "w", encoding="utf-8") as handle:
        json.dump(table, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print(f"written {BASELINE_FILE}")


if __name__ == "__main__":
    main()
