"""METEOR on long repetitive responses: peak memory and time of dialeval (and of the jar).

For each N, the hypothesis is "word" repeated N times and the reference is a short sentence
that holds "word" three times, so each of those three reference positions has N candidate
matches: the case where a search that builds every extension before pruning to the beam
(the jar's) grows with 40 x N paths of N used-word flags each.

Each measurement is a fresh process: dialeval's peak RSS is its own `ru_maxrss` (the compiled
kernel, or with `--python-search` also the pure-Python aligner); the jar's is the JVM's VmHWM (pycocoevalcap starts it with -Xmx2G; its paraphrase table alone is ~1.1 GB).

    python3 benchmarks/bench_meteor_memory.py [--sizes 1000,10000,100000] [--jar] [--python-search]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REF = "i have a word for you , one word , the last word ."

_OURS = r"""
import json, sys, time
from dialeval.metrics.base import Batch
from dialeval.metrics.overlap.meteor.metric import Meteor
from dialeval.metrics.overlap.meteor.resources import load_resources
n, ref, python_search = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
if python_search:
    from dialeval.metrics.overlap.meteor import metric as _m
    _m._kernel = lambda: None
load_resources()
t = time.perf_counter()
metric = Meteor()
stats = metric.multi_stats(Batch([" ".join(["word"] * n)], [[ref]]))
import resource
print(json.dumps({"score": float(metric.sentence_from_stats(stats)[0]), "seconds": time.perf_counter() - t,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_JAR = r"""
import json, sys, threading, time
from pycocoevalcap.meteor.meteor import Meteor
n, ref = int(sys.argv[1]), sys.argv[2]
scorer = Meteor()
scorer._stat("warm up", ["warm up"])
pid, peak, done = scorer.meteor_p.pid, [0], [False]
def watch():
    while not done[0]:
        try:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmHWM"):
                    peak[0] = max(peak[0], int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.2)
threading.Thread(target=watch, daemon=True).start()
t = time.perf_counter()
try:
    score = scorer.compute_score({0: [ref]}, {0: [" ".join(["word"] * n)]})[0]
except Exception as exc:  # the JVM died (OutOfMemoryError): the pipe breaks
    score = f"failed: {type(exc).__name__}"
done[0] = True
print(json.dumps({"score": score, "seconds": time.perf_counter() - t, "jvm_peak_mb": peak[0] / 1024}))
"""


def child(code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {"error": out.stderr[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--jar", action="store_true", help="also run the METEOR 1.5 jar (pycocoevalcap)")
    ap.add_argument("--python-search", action="store_true", help="also time the pure-Python aligner")
    args = ap.parse_args()
    print(f"{'N':>7} {'who':18} {'peak RSS MB':>11} {'seconds':>8}  score")
    for n in [int(x) for x in args.sizes.split(",")]:
        runs = [("dialeval", "0")] + ([("dialeval (Python)", "1")] if args.python_search else [])
        for who, flag in runs:
            info = child(_OURS, str(n), REF, flag)
            print(f"{n:7d} {who:18} {info.get('peak_mb', float('nan')):11.0f} {info.get('seconds', float('nan')):8.2f}  {info.get('score', info)}",
                  flush=True)
        if args.jar:
            t0 = time.perf_counter()
            info = child(_JAR, str(n), REF)
            print(f"{n:7d} {'jar':18} {info.get('jvm_peak_mb', float('nan')):11.0f} "
                  f"{info.get('seconds', time.perf_counter() - t0):8.2f}  {info.get('score', info)}", flush=True)


if __name__ == "__main__":
    main()
