"""BERTScore with its encoder cut at the layer it reads, against the whole encoder and against the
raw forward passes of its distinct texts, side by side in one run.

BERTScore reads one hidden layer (4 of MiniLM-L6's 6, 8 of MPNet's 12 by default); since issue 33
the layers above it are not run (backbones/layers.py `states_reader`). For N samples (USR-TC's
system responses with the human reply, and for a third of them the fact, as references; every
20th response is the whole dialogue context, often past 512 tokens, every 20th a single word),
one child process per model, with the model loaded before the clock starts, times best of
--repeat, interleaved:

- `whole`: `bertscore_f` through `dialeval.score`, the encoder run whole (the pass before the cut,
  `_Reader.whole = True`);
- `cut`: the same with the cut (the default);
- `raw`: the least work a whole-encoder implementation does: each distinct text once through the
  same backbone's transformers model, sorted by length, 16 to a padded batch, last hidden state;
- `raw-cut`: the same through the model cut at the layer read.

CPU seconds (time.process_time, one thread) and the ratios are printed; the cut and whole scores
are compared bit for bit in the same child.

    python3 benchmarks/bench_bertscore_layers.py --rows 200
    python3 benchmarks/bench_bertscore_layers.py --models minilm,mpnet --rows 200 --repeat 3
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
task = json.loads(sys.argv[1])
import numpy as np, torch
torch.set_num_threads(1)
from dialeval import score
from dialeval.backbones import load_backbone
from dialeval.backbones.layers import truncated
from dialeval.metrics.embedding.bertscore import _Reader, default_layer, resolve_model

samples = [json.loads(line) for line in open(task["samples"], encoding="utf-8")]
folder = resolve_model(task["model"])[0]
bb = load_backbone(folder, kind="hf")
depth = int(bb.model.config.num_hidden_layers)
layer = task["layer"] if task["layer"] is not None else default_layer(depth)
texts = list(dict.fromkeys(t.strip() for s in samples for t in [s["response"], *s["references"]] if t.strip()))
order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
limit = 512

def metric(whole):
    _Reader.whole = whole
    try:
        # no memo of token states: every repeat runs the encoder
        return np.asarray(score(samples, ["bertscore_f"], bertscore_model=task["model"],
                                bertscore_layer=layer, bertscore_memo_mb=0).sentence["bertscore_f"])
    finally:
        _Reader.whole = False

def raw(model):
    def run():
        with torch.inference_mode():
            for s in range(0, len(order), 16):
                batch = [texts[i] for i in order[s:s + 16]]
                enc = bb.tokenizer(batch, padding=True, truncation=True, max_length=limit, return_tensors="pt")
                model(**enc).last_hidden_state
    return run

modes = {"whole": lambda: metric(True), "cut": lambda: metric(False), "raw": raw(bb.model),
         "raw-cut": raw(truncated(bb.model, layer) if 0 < layer < depth else bb.model)}
best, values = {}, {}
metric(False)                                  # warm-up: first-call costs out of the clock
for _ in range(task["repeat"]):
    for name, fn in modes.items():
        t0 = time.process_time()
        out = fn()
        cpu = time.process_time() - t0
        best[name] = min(cpu, best.get(name, cpu))
        if out is not None:
            values[name] = out
print(json.dumps({"model": task["model"], "layer": layer, "depth": depth, "rows": len(samples),
                  "distinct": len(texts), "cpu": best,
                  "same_bits": bool(np.array_equal(values["whole"], values["cut"], equal_nan=True))}))
"""


def usr_tc_rows(data_root: str, n: int) -> list[dict]:
    path = os.path.join(data_root, "usr", "tc_usr_data.json")
    rows: list[dict] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        for k, item in enumerate(data):
            truth = [r["response"] for r in item["responses"] if r["model"] == "Original Ground Truth"][0]
            for j, r in enumerate(item["responses"]):
                if r["model"] == "Original Ground Truth":
                    continue
                resp = r["response"].strip()
                if len(rows) % 20 == 7:
                    resp = item["context"].replace("\n", " ")
                if len(rows) % 20 == 13:
                    resp = (resp.split() or ["ok"])[0]
                refs = [truth.strip()] + ([item["fact"].strip()[:300]] if len(rows) % 3 == 0 else [])
                rows.append({"id": f"tc{k}-{j}", "system": r["model"], "response": resp, "references": refs})
    if not rows:          # no data here: a synthetic set of short and long texts
        words = "the a we you they go see like play music film book train beach today never always".split()
        for i in range(max(n, 1)):
            size = 3 + (i * 7) % 40 + (400 if i % 20 == 7 else 0)
            text = " ".join(words[(i * 3 + w * 5) % len(words)] for w in range(size))
            rows.append({"id": str(i), "system": "s", "response": text,
                         "references": [" ".join(reversed(text.split()))[:200] or "ok"]})
    return rows[:n]


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="minilm", help="comma-separated: minilm, mpnet or encoder folders")
    ap.add_argument("--layer", type=int, default=None, help="layer read (default: two thirds of the depth)")
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-root", default=os.path.join(here, "..", "..", "shared", "data"))
    args = ap.parse_args()
    rows = usr_tc_rows(args.data_root, args.rows)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        samples = os.path.join(tmp, "samples.jsonl")
        with open(samples, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in rows)
        for model in args.models.split(","):
            task = {"samples": samples, "model": model, "layer": args.layer, "repeat": args.repeat}
            proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(task)], env=env,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{model}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                continue
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"CPU seconds, one thread, best of {args.repeat}; {len(rows)} rows")
    print("| model | layer | distinct texts | whole s | cut s | raw s | raw-cut s | cut / whole | whole / raw "
          "| cut / raw | cut / raw-cut | same bits |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        c = r["cpu"]
        print(f"| {r['model']} | {r['layer']} of {r['depth']} | {r['distinct']} | {c['whole']:.2f} | {c['cut']:.2f} "
              f"| {c['raw']:.2f} | {c['raw-cut']:.2f} | {c['cut'] / c['whole']:.3f} | {c['whole'] / c['raw']:.3f} "
              f"| {c['cut'] / c['raw']:.3f} | {c['cut'] / c['raw-cut']:.3f} | {'yes' if r['same_bits'] else 'NO'} |")


if __name__ == "__main__":
    main()
