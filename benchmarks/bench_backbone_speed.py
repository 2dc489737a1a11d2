"""Backbone metrics against the raw forward passes they cannot avoid, side by side.

For a set of samples (DSTC6 systems and their references when the data is there, else a
synthetic set), this times:

- `raw`: the sentence-transformers model encoding each DISTINCT text of the set once
  (`SentenceTransformer.encode`, its own length-sorted, padded batches), the least work any
  implementation of `sent_cosine` has to do;
- each metric named by --metrics through `dialeval.score` on the same samples, in a fresh
  process (model loading is timed apart and left out of the ratio).

and prints CPU seconds of each and the ratio metric / raw. CPU seconds are read from the child
process (time.process_time), which other load on a shared machine disturbs less than wall time.

    python3 benchmarks/bench_backbone_speed.py --data-root $DATA --samples 20000 --refs 4
    python3 benchmarks/bench_backbone_speed.py --metrics sent_cosine,deep_am --samples 2000
    python3 benchmarks/bench_backbone_speed.py --raw lm --metrics deep_fm --samples 300 --refs 2
    python3 benchmarks/bench_backbone_speed.py --raw lm --metrics lm_fluency --samples 300 --refs 0 \
        --baseline OLD/src        # the same metrics from another source tree too, in the same run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
os.environ.setdefault("OMP_NUM_THREADS", "1")
task = json.loads(sys.argv[1])
samples = [json.loads(line) for line in open(task["samples"], encoding="utf-8")]
if task["what"] == "raw":
    from dialeval.backbones.defaults import default_sentence_model
    t0 = time.process_time()
    from sentence_transformers import SentenceTransformer
    import torch
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    model = SentenceTransformer(default_sentence_model(), device="cpu")
    load = time.process_time() - t0
    texts = list(dict.fromkeys(t for s in samples for t in [s["response"], *s["references"]] if t.strip()))
    t0, w0 = time.process_time(), time.perf_counter()
    model.encode(texts, batch_size=16, convert_to_numpy=True)
    print(json.dumps({"what": "raw", "distinct_texts": len(texts), "load_cpu": load,
                      "cpu": time.process_time() - t0, "wall": time.perf_counter() - w0}))
elif task["what"] == "raw-lm":
    from dialeval.metrics.lm.checkpoint import load_lm
    from dialeval.metrics.lm.logprob import layout
    from dialeval.models.defaults import default_model_dir
    import torch
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    t0 = time.process_time()
    lm = load_lm(default_model_dir("lm"))
    load = time.process_time() - t0
    texts = list(dict.fromkeys(t for s in samples for t in [s["response"], *s["references"]] if t.strip()))
    seqs = [layout(lm, None, lm.encode(t))[0] for t in texts]
    t0, w0 = time.process_time(), time.perf_counter()
    with torch.inference_mode():
        for seq in seqs:        # one unpadded forward pass per distinct text: no filling, no batching
            lm.model(input_ids=torch.tensor([seq], device=lm.device)).logits
    print(json.dumps({"what": "raw-lm", "distinct_texts": len(texts), "load_cpu": load,
                      "cpu": time.process_time() - t0, "wall": time.perf_counter() - w0}))
else:
    from dialeval import score
    t0 = time.process_time()
    score(samples[:2], [task["what"]])     # loads the model(s): timed apart
    load = time.process_time() - t0
    from dialeval.backbones import clear_vectors
    clear_vectors()
    t0, w0 = time.process_time(), time.perf_counter()
    score(samples, [task["what"]])
    print(json.dumps({"what": task["what"], "load_cpu": load, "cpu": time.process_time() - t0,
                      "wall": time.perf_counter() - w0}))
"""


def dstc6_samples(root: str, n: int, refs: int) -> list[dict]:
    base = os.path.join(root, "dstc6-eval")
    ref_files = [os.path.join(base, "references", f"refgen_result{i}.txt") for i in range(1, 11)]
    ref_lines = [open(p, encoding="utf-8").read().splitlines() for p in ref_files[:refs]]
    out: list[dict] = []
    for s in range(1, 21):
        hyps = open(os.path.join(base, "hypotheses", f"S_{s}.txt"), encoding="utf-8").read().splitlines()
        for i, h in enumerate(hyps):
            out.append({"id": f"{s}-{i}", "system": f"S_{s}", "response": h,
                        "references": [r[i] for r in ref_lines]})
            if len(out) == n:
                return out
    return out


def synthetic_samples(n: int, refs: int) -> list[dict]:
    import random

    rng = random.Random(0)
    words = ("the a to you i it is what do not we can go see time day good well really yes no "
             "think know like want going sure thanks maybe tomorrow morning tonight weekend").split()

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))

    pool = [sentence() for _ in range(max(50, n // 3))]
    return [{"id": str(i), "response": rng.choice(pool), "references": [sentence() for _ in range(refs)]}
            for i in range(n)]


def run_child(task: dict, src: str | None = None) -> dict:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(src), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(task)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=os.environ.get("DATA"), help="public data root (DSTC6 under dstc6-eval/)")
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--refs", type=int, default=4)
    ap.add_argument("--metrics", default="sent_cosine")
    ap.add_argument("--raw", choices=["st", "lm"], default="st",
                    help="the baseline: the sentence encoder's encode (st), or one forward pass of the "
                         "default causal LM per distinct text in its fluency frame (lm; for lm_* and deep_fm)")
    ap.add_argument("--baseline", help="another dialeval source tree (its src folder): its metrics timed too")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    if args.data_root and os.path.isdir(os.path.join(args.data_root, "dstc6-eval")):
        samples, source = dstc6_samples(args.data_root, args.samples, args.refs), "DSTC6"
    else:
        samples, source = synthetic_samples(args.samples, args.refs), "synthetic"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "samples.jsonl")
        with open(path, "w", encoding="utf-8") as handle:
            for s in samples:
                handle.write(json.dumps(s) + "\n")
        rows = [run_child({"what": "raw" if args.raw == "st" else "raw-lm", "samples": path})]
        if args.baseline:
            rows += [dict(run_child({"what": m, "samples": path}, args.baseline), what=f"{m} (baseline)")
                     for m in args.metrics.split(",")]
        rows += [run_child({"what": m, "samples": path}) for m in args.metrics.split(",")]
    raw = rows[0]
    print(f"{source}: {len(samples)} samples x {args.refs} references, "
          f"{raw['distinct_texts']} distinct texts, one thread")
    print(f"{'run':<24}{'CPU s':>9}{'wall s':>9}{'load CPU s':>12}{'ratio (CPU)':>13}")
    for r in rows:
        print(f"{r['what']:<24}{r['cpu']:>9.1f}{r['wall']:>9.1f}{r['load_cpu']:>12.1f}{r['cpu'] / raw['cpu']:>13.3f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"source": source, "samples": len(samples), "refs": args.refs, "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
