"""The encoders' batches without their copies: the old fixed fill, the new minimal fill and the raw
forward passes of the distinct texts, side by side in one run; and the metric values before and
after, bit for bit.

The encoders batch texts of one token length (no padding). The old rule filled every batch to its
batch size with copies of its first text (`batching.filled`), so a text whose length nobody else
shares was computed batch-size times; the new rule (`batching.pass_rows` = `min_filled`) adds
copies only to a batch under MIN_POSITIONS positions. `batching.FIXED_FILL = True` brings the old
rule back, in-process, for the comparison.

For N distinct texts (DailyDialog test turns, FED and USR-TC responses, USR-TC contexts and facts,
often past 512 tokens, and one-word replies; a synthetic set where ../shared/data is absent), one
child process per model, model loaded before the clock, one thread, best of --repeat, interleaved:

- sent_cosine's encoder (`text_encoder("model")`, the sentence-transformers pipeline, batch 16):
  `fixed`, `new`, and `raw` = `SentenceTransformer.encode` of the distinct texts (its own length
  sort, 16 to a padded batch);
- BERTScore's token states (`token_states_at`, the default layer, batch 4 = the metric's default;
  also `new@16`): `fixed`, `new`, and `raw` = the encoder cut at that layer, distinct texts sorted
  by length, 16 to a padded batch.

Every vector and token state of `new` is compared with `fixed` (np.array_equal). Then
`dialeval score` runs twice in fresh processes, old rule and new, with sent_cosine, bertscore_f,
adem and mme_em on examples/demo.jsonl and on --rows USR-TC samples, and the output files are
compared byte for byte.

    python3 benchmarks/bench_backbone_fill.py --texts 300 --repeat 3
    python3 benchmarks/bench_backbone_fill.py --models minilm,mpnet --texts 300 --repeat 2
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
METRICS = "sent_cosine,bertscore_f,adem,mme_em"

CHILD = r"""
import json, sys, time
task = json.loads(sys.argv[1])
import numpy as np, torch
torch.set_num_threads(1)
from dialeval.backbones import batching, load_backbone
from dialeval.backbones.encoding import token_states_at
from dialeval.backbones.layers import truncated
from dialeval.metrics.embedding.bertscore import default_layer, resolve_model

texts = json.load(open(task["texts"], encoding="utf-8"))
folder = resolve_model(task["model"])[0]
st = load_backbone(folder, kind="sentence-transformers")
hf = load_backbone(folder, kind="hf")
depth = int(hf.model.config.num_hidden_layers)
layer = default_layer(depth)
cut = truncated(hf.model, layer) if 0 < layer < depth else hf.model
order = sorted(range(len(texts)), key=lambda i: len(texts[i]))

def sent(fixed):
    def run():
        batching.FIXED_FILL = fixed
        try:
            return list(st.text_encoder("model", batch_size=16, shared=False).encode(texts))
        finally:
            batching.FIXED_FILL = False
    return run

def states(fixed, size):
    def run():
        batching.FIXED_FILL = fixed
        try:
            return [s.states for s in token_states_at(hf, texts, [layer], size, 512)[layer]]
        finally:
            batching.FIXED_FILL = False
    return run

def raw_sent():
    st.sentence_model.encode(texts, batch_size=16, convert_to_numpy=True, show_progress_bar=False)

def raw_states():
    with torch.inference_mode():
        for s in range(0, len(order), 16):
            batch = [texts[i] for i in order[s:s + 16]]
            enc = hf.tokenizer(batch, padding=True, truncation=True, max_length=512, return_tensors="pt")
            cut(**enc).last_hidden_state

modes = {"sent fixed": sent(True), "sent new": sent(False), "sent raw": raw_sent,
         "states fixed": states(True, 4), "states new": states(False, 4), "states new@16": states(False, 16),
         "states raw": raw_states}
best, values = {}, {}
for fn in (sent(False), states(False, 4)):     # warm-up: first-call costs out of the clock
    fn()
for _ in range(task["repeat"]):
    for name, fn in modes.items():
        t0 = time.process_time()
        out = fn()
        cpu = time.process_time() - t0
        best[name] = min(cpu, best.get(name, cpu))
        if out is not None:
            values[name] = out
same = {k: all(np.array_equal(a, b) for a, b in zip(values[f"{k} fixed"], values[f"{k} new"]))
        for k in ("sent", "states")}
same["states@16"] = all(np.array_equal(a, b) for a, b in zip(values["states fixed"], values["states new@16"]))
print(json.dumps({"model": task["model"], "layer": layer, "depth": depth, "texts": len(texts), "cpu": best,
                  "same_bits": same}))
"""

SCORE = r"""
import sys
from dialeval.backbones import batching
batching.FIXED_FILL = sys.argv[1] == "fixed"
from dialeval.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def gather_texts(data_root: str, n: int, seed: int = 0) -> list[str]:
    """Distinct texts of every length: short replies, dialogue turns, responses, long contexts."""
    out: list[str] = ["", "hi", "ok", "no", "yes .", "?", "sure !", "thanks", "why ?", "hmm", "bye", "ok ."]
    with open(os.path.join(HERE, "..", "examples", "demo.jsonl"), encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out += [row["response"], *row["references"], *row.get("context", [])]
    dd = os.path.join(data_root, "dailydialog", "test.zip")
    if os.path.exists(dd):
        with zipfile.ZipFile(dd) as z:
            for dialogue in z.read("test/dialogues_test.txt").decode("utf-8").splitlines()[:50]:
                out += [t.strip() for t in dialogue.split("__eou__") if t.strip()]
    fed = os.path.join(data_root, "fed", "fed_data.json")
    if os.path.exists(fed):
        with open(fed, encoding="utf-8") as handle:
            items = json.load(handle)
        out += [x["response"] for x in items[:80] if x.get("response")] + [x["context"] for x in items[:5]]
    usr = os.path.join(data_root, "usr", "tc_usr_data.json")
    if os.path.exists(usr):
        with open(usr, encoding="utf-8") as handle:
            items = json.load(handle)
        for x in items[:10]:
            out += [r["response"].strip() for r in x["responses"]] + [x["context"], x["fact"]]
    if len(set(out)) < n:       # no data here: a synthetic set of short and long texts
        words = "the a we you they go see like play music film book train beach today never always".split()
        for i in range(n):
            size = 1 + (i * 7) % 40 + (400 if i % 20 == 7 else 0)
            out.append(" ".join(words[(i * 3 + w * 5) % len(words)] for w in range(size)))
    out = list(dict.fromkeys(out))
    random.Random(seed).shuffle(out)
    return out[:n]


def usr_samples(data_root: str, n: int) -> list[dict]:
    """USR-TC system responses with the human reply as reference and the last 3 turns as context."""
    path = os.path.join(data_root, "usr", "tc_usr_data.json")
    rows: list[dict] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            items = json.load(handle)
        for k, item in enumerate(items):
            truth = [r["response"] for r in item["responses"] if r["model"] == "Original Ground Truth"][0].strip()
            turns = [t.strip() for t in item["context"].split("\n") if t.strip()][-3:]
            for j, r in enumerate(item["responses"]):
                if r["model"] != "Original Ground Truth":
                    resp = r["response"].strip() if len(rows) % 20 != 13 else (r["response"].split() or ["ok"])[0]
                    rows.append({"id": f"tc{k}-{j}", "system": r["model"], "context": turns, "response": resp,
                                 "references": [truth]})
    return rows[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="minilm", help="comma-separated: minilm, mpnet or encoder folders")
    ap.add_argument("--texts", type=int, default=300)
    ap.add_argument("--rows", type=int, default=200, help="USR-TC samples of the metric check (0: demo only)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-root", default=os.path.join(HERE, "..", "..", "shared", "data"))
    args = ap.parse_args()
    texts = gather_texts(args.data_root, args.texts)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "texts.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(texts, handle)
        for model in args.models.split(","):
            task = {"texts": path, "model": model, "repeat": args.repeat}
            proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(task)], env=env,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{model}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                continue
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))

        inputs = {"demo": os.path.join(HERE, "..", "examples", "demo.jsonl")}
        samples = usr_samples(args.data_root, args.rows)
        if samples:
            inputs["usr-tc"] = os.path.join(tmp, "usr.jsonl")
            with open(inputs["usr-tc"], "w", encoding="utf-8") as handle:
                handle.writelines(json.dumps(s) + "\n" for s in samples)
        checks = []
        for name, source in inputs.items():
            outs = {}
            for rule in ("fixed", "new"):
                outs[rule] = os.path.join(tmp, f"{name}-{rule}.jsonl")
                proc = subprocess.run([sys.executable, "-c", SCORE, rule, "score", source, "--metrics", METRICS,
                                       "-o", outs[rule]], env=env, capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"score {name} ({rule}): failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                    break
            else:
                with open(outs["new"], encoding="utf-8") as handle:
                    n = sum(1 for _ in handle)
                checks.append((name, n, filecmp.cmp(outs["fixed"], outs["new"], shallow=False)))

    print(f"CPU seconds, one thread, best of {args.repeat}; {len(texts)} distinct texts")
    print("| model | encoder | old fixed fill s | new fill s | raw s | fixed / raw | new / raw | new / fixed "
          "| same bits |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        c, same = r["cpu"], r["same_bits"]
        rows = [("sent_cosine (batch 16)", "sent", c["sent new"], same["sent"]),
                (f"BERTScore states L{r['layer']} (batch 4)", "states", c["states new"], same["states"]),
                (f"BERTScore states L{r['layer']} (new at batch 16)", "states", c["states new@16"], same["states@16"])]
        for label, key, new, ok in rows:
            fixed, raw = c[f"{key} fixed"], c[f"{key} raw"]
            print(f"| {r['model']} | {label} | {fixed:.2f} | {new:.2f} | {raw:.2f} | {fixed / raw:.2f} "
                  f"| {new / raw:.2f} | {new / fixed:.2f} | {'yes' if ok else 'NO'} |")
    print(f"\n`dialeval score --metrics {METRICS}`, old rule against new, output files byte for byte:")
    for name, n, same in checks:
        print(f"- {name} ({n} rows): {'identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
