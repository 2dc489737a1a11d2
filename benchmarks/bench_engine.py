"""Engine scaling: wall time and peak memory of `dialeval score` on synthetic sets.

Each sample is a response and 4 references drawn from a pool of sentences (Zipf-distributed
words), the way dialogue data repeats itself; metrics BLEU-1..4, ROUGE-L and CIDEr-D. Every size
runs as its own `python -m dialeval.cli score` process, so peak RSS is that run's alone
(`os.wait4`), and the table prints ratios against the smallest size measured in the same
invocation.

    python3 benchmarks/bench_engine.py --sizes 100000,1000000 [--workdir DIR] [--keep]

Inputs and outputs go to --workdir (default: a temporary folder), never into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

METRICS = "bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d"


def make_pool(n_sentences: int, vocab: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1.0 / (i + 1) for i in range(vocab)]
    return [" ".join(rng.choices(words, weights, k=rng.randint(5, 15))) for _ in range(n_sentences)]


def write_set(path: str, n: int, pool: list[str], seed: int) -> None:
    rng = random.Random(seed)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        for i in range(n):
            refs = [rng.choice(pool) for _ in range(4)]
            handle.write(json.dumps({"id": str(i), "response": rng.choice(pool), "references": refs}) + "\n")
    os.replace(path + ".tmp", path)


def run(args: list[str], env: dict) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds (user + system), peak RSS in MiB, exit status) of one child.
    On a shared machine wall time includes waiting for a core; CPU time does not."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(err, file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--pool", type=int, default=50_000, help="distinct sentences")
    parser.add_argument("--vocab", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--metrics", default=METRICS)
    parser.add_argument("--chunk-size", type=int, default=None)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--keep", action="store_true", help="keep inputs and outputs")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = args.workdir or tempfile.mkdtemp(prefix="bench-engine-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    pool = make_pool(args.pool, args.vocab, args.seed)
    rows = []
    try:
        for n in sizes:
            path = os.path.join(work, f"synth-{n}.jsonl")
            if not os.path.exists(path):
                write_set(path, n, pool, args.seed + n)
            out = os.path.join(work, f"synth-{n}.scores.jsonl")
            cmd = [sys.executable, "-m", "dialeval.cli", "score", path, "--metrics", args.metrics, "-o", out]
            if args.chunk_size:
                cmd += ["--chunk-size", str(args.chunk_size)]
            wall, cpu, rss, code = run(cmd, env)
            rows.append((n, wall, cpu, rss, code))
            print(f"n={n}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss} MiB, exit {code}", flush=True)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    base = rows[0]
    print()
    print(f"| samples | wall s | CPU s | peak RSS MiB | wall / {base[0]:,} | CPU / {base[0]:,} "
          f"| RSS / {base[0]:,} | samples per CPU s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, wall, cpu, rss, code in rows:
        print(f"| {n:,} | {wall:.1f} | {cpu:.1f} | {rss} | {wall / base[1]:.2f} | {cpu / base[2]:.2f} "
              f"| {rss / base[3]:.2f} | {n / cpu:,.0f} |")
    return 0 if all(r[4] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
