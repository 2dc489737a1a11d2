"""AM-FM timings, each beside a baseline run in the same process:

1. training on 10,000 sentences (DailyDialog train, as the paper's 10K-sentence SVD): our
   `AMFMModel.fit` against the bare tools it wraps (scikit-learn CountVectorizer +
   TruncatedSVD, and one lmplz run on the same text);
2. scoring one DSTC6 system (2,000 responses x 11 references) with am, fm, amfm from a saved
   model (load included), against BLEU-4 on the same input.

    OMP_NUM_THREADS=2 python3 benchmarks/bench_amfm.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    ap.add_argument("--sentences", type=int, default=10000)
    ap.add_argument("--system", default="S_1")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    shared = Path(args.shared)

    from dialeval.data.corpus import read_corpus, sentences
    from dialeval.metrics.amfm.model import AMFMModel
    from dialeval.metrics.amfm.ngram import find_lmplz
    from dialeval.metrics.amfm.text import tokens

    pool = sentences(read_corpus(shared / "data" / "dailydialog" / "train.zip"))
    train = random.Random(0).sample(pool, args.sentences)
    n_words = sum(len(tokens(s)) for s in train)
    print(f"training corpus: {len(train)} DailyDialog sentences, {n_words} tokens")

    def baseline_fit(dims, order):
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import CountVectorizer

        x = CountVectorizer(token_pattern=r"\w+|[^\w\s]").fit_transform(train)
        TruncatedSVD(dims, algorithm="randomized", random_state=0).fit(x)
        with tempfile.TemporaryDirectory() as tmp:
            text = os.path.join(tmp, "c.txt")
            Path(text).write_text("\n".join(" ".join(tokens(s)) for s in train) + "\n")
            subprocess.run([find_lmplz(), "-o", str(order), "-S", "400M", "-T", tmp, "--discount_fallback",
                            "--text", text, "--arpa", os.path.join(tmp, "lm.arpa")],
                           check=True, capture_output=True)

    print(f"{'task':44s} {'dialeval s':>10s} {'baseline s':>10s} {'ratio':>6s}")
    for dims, order in [(10, 2), (10, 4), (500, 2)]:
        ours = min(_timed(lambda: AMFMModel(dims=dims, order=order, lsi_sentences=None).fit(train))[0]
                   for _ in range(args.repeat if dims < 1000 else 1))
        base = min(_timed(lambda: baseline_fit(dims, order))[0] for _ in range(args.repeat))
        print(f"{f'train L={dims} n={order} ({len(train)} sentences)':44s} {ours:10.2f} {base:10.2f} "
              f"{ours / base:6.2f}   (baseline: sklearn CountVectorizer+TruncatedSVD + lmplz, same L, n)")

    from dialeval.data.datasets import load_dataset
    from dialeval.scoring import score

    ds = load_dataset("dstc6", shared / "data" / "dstc6-eval")
    samples = [s for s in ds.samples if s.system == args.system]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "model")
        AMFMModel(dims=10, order=2).fit(pool).save(model_dir)
        from dialeval.metrics.amfm import model as model_module

        def ours():
            model_module._CACHE.clear()      # count the verified load too
            return score(samples, ["am", "fm", "amfm"], amfm_model=model_dir, progress=False)

        t_ours = min(_timed(ours)[0] for _ in range(args.repeat))
        t_bleu = min(_timed(lambda: score(samples, ["bleu4"], progress=False))[0] for _ in range(args.repeat))
        n = len(samples)
        print(f"{f'score {args.system}: am,fm,amfm ({n} x 11 refs)':44s} {t_ours:10.2f} {t_bleu:10.2f} "
              f"{t_ours / t_bleu:6.2f}   (baseline: bleu4)  -> {n / t_ours:,.0f} responses/s")


if __name__ == "__main__":
    main()
