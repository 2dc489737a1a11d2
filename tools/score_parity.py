"""Scores files of every model-backed default, to check a refactor changes no number.

    python3 tools/score_parity.py --data-root DATA --out DIR        # before the change
    python3 tools/score_parity.py --data-root DATA --out DIR2       # after it
    python3 tools/score_parity.py --compare DIR DIR2                # byte-for-byte, file by file

Each input (the demo, and the first `--rows` rows of two rated sets) is written as JSONL, then
`dialeval score` runs once per metric family so that one file's bytes answer for one family;
`signatures.txt` holds every metric's signature at the defaults and with each precision option at
bf16, since the signature is part of what a refactor must keep (or change on purpose).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

FAMILIES = {
    "sentence": "sent_cosine,deep_am",
    "bertscore": "bertscore_p,bertscore_r,bertscore_f",
    "vectors": "emb_average,emb_extrema,emb_greedy",
    "lm": "lm_coherence,lm_fluency,lm_coherence_raw,lm_fluency_raw,deep_fm,deep_amfm",
    "amfm": "am,fm,fm_abs,amfm",
    "adem": "adem,c_adem,r_adem",
    "mme": "mme_fm,mme_rm,mme_tcm,mme_em,mme_sm_nll,mme_sm_nce,mme_sm_ppl,mme_rm_cross",
    "compose": "compose,compose_ref",
    "judge": "judge,judge_relevance",
}
SETS = (("usr-tc", "usr"), ("grade-dailydialog", "grade"))


def inputs(data_root: Path | None, rows: int, out: Path) -> list[Path]:
    here = Path(__file__).resolve().parents[1]
    files = [here / "examples" / "demo.jsonl"]
    if data_root is None:
        return files
    from dialeval.data.datasets import load_dataset
    for name, folder in SETS:
        ds = load_dataset(name, data_root / folder)
        path = out / f"{name}.{rows}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for sample in list(ds.samples)[:rows]:
                fh.write(json.dumps(sample.to_dict(), sort_keys=True) + "\n")
        files.append(path)
    return files


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    for src in inputs(Path(args.data_root) if args.data_root else None, args.rows, out):
        for family, metrics in FAMILIES.items():
            if args.only and family not in args.only.split(","):
                continue
            target = out / f"{src.stem}.{family}.jsonl"
            cmd = ["dialeval", "score", str(src), "--metrics", metrics, "-o", str(target)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            print(f"{target.name}: exit {done.returncode}", file=sys.stderr)
            if done.returncode:
                (out / f"{target.name}.err").write_text(done.stderr)
    with open(out / "signatures.txt", "w", encoding="utf-8") as fh:
        for precision in ("fp32", "bf16"):
            fh.write(signatures(precision))


def signatures(precision: str) -> str:
    """Every metric's signature, built with each precision option at `precision`."""
    from dialeval.metrics.registry import REGISTRY
    lines = []
    for name in sorted(REGISTRY):
        spec = REGISTRY[name]
        try:
            opts = {k: precision for k in spec.options if k.endswith("_precision")}
            metric = spec.build(**opts)
            lines.append(f"{precision} {name} {metric.signature()}")
        except Exception as exc:  # noqa: BLE001 - a metric that cannot be built says why, in its line
            lines.append(f"{precision} {name} ! {type(exc).__name__}: {exc}")
    return "\n".join(lines) + "\n"


def compare(a: Path, b: Path) -> int:
    for folder in (a, b):
        if not folder.is_dir():
            sys.exit(f"score_parity.py: {folder}: no such folder (write one with --out first)")
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    bad = 0
    for name in names:
        if not (a / name).exists() or not (b / name).exists():
            print(f"{name}: only in {'first' if (a / name).exists() else 'second'}")
            bad += 1
        elif not filecmp.cmp(a / name, b / name, shallow=False):
            print(f"{name}: differs")
            bad += 1
    print(f"{len(names) - bad} of {len(names)} files identical")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root")
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--only", help="comma-separated families (default: all)")
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2, metavar="DIR")
    args = ap.parse_args()
    if not args.compare and not args.out:
        ap.error("give --out DIR (to write scores) or --compare DIR DIR")
    if args.compare:
        sys.exit(compare(Path(args.compare[0]), Path(args.compare[1])))
    run(args)


if __name__ == "__main__":
    main()
