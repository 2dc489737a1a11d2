"""Turn-level Spearman (95% percentile-bootstrap CI, 1,000 resamples) of AM, FM and AM-FM
beside BLEU-2 and ROUGE-L on USR-TC, USR-PC, GRADE and the Gupta multi-reference set.

USR's "Original Ground Truth" responses are left out: they are the reference itself.

    OMP_NUM_THREADS=2 python3 benchmarks/amfm_turn_level.py --amfm-model MODEL_DIR [--shared ../shared]
"""

from __future__ import annotations

import argparse
from pathlib import Path

# (set, quality, systems left out); the folder is the data-set registry's
SETS = [("usr-tc", "overall", ["Original Ground Truth"]),
        ("usr-pc", "overall", ["Original Ground Truth"]),
        ("grade-dailydialog", "coherence", []),
        ("grade-convai2", "coherence", []),
        ("grade-empatheticdialogues", "coherence", []),
        ("gupta", "overall", [])]
METRICS = ["am", "fm", "amfm", "bleu2", "rouge_l"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    ap.add_argument("--amfm-model", required=True)
    ap.add_argument("--amfm-lambda", type=float, default=0.8)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()

    from dialeval.data.datasets import get_spec, load_dataset
    from dialeval.meta.correlation import correlate
    from dialeval.scoring import score

    print("| data set | quality | n | " + " | ".join(METRICS) + " |")
    print("|---|---|---|" + "---|" * len(METRICS))
    for name, quality, exclude in SETS:
        ds = load_dataset(name, Path(args.shared) / "data" / get_spec(name).folder, exclude_systems=exclude)
        samples = [s for s in ds.samples if s.references]
        human = [s.human(quality) for s in samples]
        out = score(samples, METRICS, amfm_model=args.amfm_model, amfm_lambda=args.amfm_lambda,
                    progress=False)
        cells = []
        for m in METRICS:
            c = correlate(out.sentence[m], human, ["spearman"], "turn", n_boot=args.n_boot, seed=0)[0]
            cells.append(f"{c.r:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]")
        print(f"| {name} | {quality} | {len(samples)} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
