"""METEOR: dialeval (pure Python) beside the METEOR 1.5 jar (through pycocoevalcap), same input.

For each input set and reference mode it prints wall seconds and the ratio jar / dialeval:

- jar: JVM start + paraphrase-table load (`Meteor()` and a first segment), then scoring
  (pycocoevalcap's `compute_score`; in max mode every (hypothesis, reference) pair is a segment,
  as the golden max-mode values were made), both measured inside this process;
- dialeval: a fresh `python -c` process that imports dialeval, loads the cached resources and
  scores, timed from outside (so it includes interpreter start and imports), with its own
  inside breakdown (resource load, scoring);
- CPU seconds of the JVM and of the dialeval process (with its forked workers), from
  `getrusage(RUSAGE_CHILDREN)`: less sensitive than wall time to other load on the machine.

The jar's corpus value printed in max mode is its aggregate over all pairs, not the max-mode
value (the mean of per-item maxima) that dialeval prints.

`--build-cache` also times building the paraphrase cache from scratch in a temporary folder.
`--parity` instead compares every golden METEOR value (nlg-eval fixtures, the synthetic set and
all 20 DSTC6 systems, multi and max modes) and prints the differences (about 10 CPU minutes).
Run from the repository root: `python3 benchmarks/bench_meteor.py [--runs 3] [--build-cache]`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIALEVAL_SHARED", REPO.parent / "shared"))
DSTC6_REFS = ["original_refs.txt"] + [f"refgen_result{i}.txt" for i in range(1, 11)]


def load_set(name: str) -> tuple[list[str], list[list[str]]]:
    if name == "synth":
        rows = [json.loads(x) for x in (SHARED / "golden" / "synth-2000x11.jsonl").read_text().splitlines()]
        return [r["hyp"] for r in rows], [r["refs"] for r in rows]
    root = SHARED / "data" / "dstc6-eval"
    hyps = [x.strip() for x in (root / "hypotheses" / f"{name}.txt").read_text(encoding="utf-8").splitlines()]
    refs = [[x.strip() for x in (root / "references" / f).read_text(encoding="utf-8").splitlines()] for f in DSTC6_REFS]
    return hyps, [list(r) for r in zip(*refs)]


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_jar(hyps, refs, mode: str) -> tuple[float, float, float, float]:
    from pycocoevalcap.meteor.meteor import Meteor

    if mode == "max":
        pairs = [(h, [r]) for h, rs in zip(hyps, refs) for r in rs]
    else:
        pairs = list(zip(hyps, refs))
    gts = {i: list(r) for i, (_, r) in enumerate(pairs)}
    res = {i: [h] for i, (h, _) in enumerate(pairs)}
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    scorer = Meteor()
    scorer._stat("warm up", ["warm up"])          # blocks until the JVM has loaded the tables
    t1 = time.perf_counter()
    corpus, _ = scorer.compute_score(gts, res)
    t2 = time.perf_counter()
    del scorer          # closes stdin, kills and waits for the JVM
    gc.collect()
    return t1 - t0, t2 - t1, corpus, _child_cpu() - cpu0


_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from dialeval.metrics.overlap.meteor.resources import load_resources
from dialeval.data.sample import Sample
from dialeval.scoring import score
sys.path.insert(0, {bench!r})
from bench_meteor import load_set
hyps, refs = load_set({name!r})
samples = [Sample(id=str(i), response=h, references=r) for i, (h, r) in enumerate(zip(hyps, refs))]
t1 = time.perf_counter()
load_resources()
t2 = time.perf_counter()
result = score(samples, ["meteor"], refs_mode={mode!r}, progress=False, meteor_workers={workers!r})
t3 = time.perf_counter()
print(json.dumps({{"imports_and_input": t1 - t0, "resources": t2 - t1, "scoring": t3 - t2,
                  "corpus": result.corpus["meteor"]}}))
"""


def run_dialeval(name: str, mode: str, workers: int, src: str | None = None) -> tuple[float, dict]:
    """One fresh process; `src` puts another dialeval source tree first (the baseline)."""
    code = _CHILD.format(bench=str(Path(__file__).resolve().parent), name=name, mode=mode, workers=workers)
    env = dict(os.environ, PYTHONPATH=src) if src else None
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - t0
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    info["cpu"] = _child_cpu() - cpu0     # the process and its forked workers
    return wall, info


def parity() -> None:
    """Every golden METEOR corpus and sentence value against dialeval's, both reference modes."""
    import numpy as np

    from dialeval.data.readers import read_parallel
    from dialeval.data.sample import Sample
    from dialeval.scoring import score

    golden = SHARED / "golden"
    fixtures = json.loads((golden / "nlg-eval-fixtures.json").read_text())["sets"]
    synth = json.loads((golden / "synth-2000x11.json").read_text())["sets"]["synth-2000x11"]
    dstc6 = json.loads((golden / "dstc6.json").read_text())["systems"]
    root = SHARED / "data" / "dstc6-eval"
    dstc6_samples = read_parallel([root / "hypotheses" / f"S_{k}.txt" for k in range(1, 21)],
                                  [root / "references" / f for f in DSTC6_REFS])
    rows = []       # (set, mode, ours, gold, |sentence diffs|)
    for mode in ("multi", "max"):
        t0 = time.perf_counter()
        for name, case in fixtures.items():
            samples = [Sample(id=str(i), response=h, references=r)
                       for i, (h, r) in enumerate(zip(case["input"]["hyps"], case["input"]["refs"]))]
            res = score(samples, ["meteor"], refs_mode=mode, progress=False)
            rows.append((name, mode, res.corpus["meteor"], case[mode]["meteor"],
                         np.abs(res.sentence["meteor"] - case[mode]["meteor"]["sentence"])))
        hyps, refs = load_set("synth")
        samples = [Sample(id=str(i), response=h, references=r) for i, (h, r) in enumerate(zip(hyps, refs))]
        res = score(samples, ["meteor"], refs_mode=mode, progress=False)
        rows.append(("synth", mode, res.corpus["meteor"], synth[mode]["meteor"],
                     np.abs(res.sentence["meteor"] - synth[mode]["meteor"]["sentence"])))
        res = score(dstc6_samples, ["meteor"], refs_mode=mode, progress=False)
        for k in range(1, 21):
            system = f"S_{k}"
            idx = np.array([i for i, x in enumerate(dstc6_samples) if x.system == system])
            gold = dstc6[system][mode]["meteor"]
            rows.append((system, mode, res.systems[system]["meteor"], gold,
                         np.abs(res.sentence["meteor"][idx] - gold["sentence"])))
        print(f"{mode}: {time.perf_counter() - t0:.1f} s", flush=True)
    for name, mode, ours, gold, diffs in rows:
        print(f"  {name:24s} {mode:5s} ours={ours!r:22s} gold={gold['corpus']!r:22s} "
              f"|diff|={abs(ours - gold['corpus']):.3g}  max sentence |diff|={diffs.max():.3g}")
    n = sum(len(d) for *_, d in rows)
    off = sum(int((d > 1e-6).sum()) for *_, d in rows)
    print(f"corpus values: {len(rows)}, max |diff| {max(abs(o - g['corpus']) for _, _, o, g, _ in rows):.3g}; "
          f"sentence values: {n}, off by more than 1e-6: {off}, max |diff| "
          f"{max(d.max() for *_, d in rows):.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="synth,S_1")
    parser.add_argument("--modes", default="multi,max")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--build-cache", action="store_true")
    parser.add_argument("--no-jar", action="store_true")
    parser.add_argument("--workers", default="1,2", help="dialeval alignment processes to time (list)")
    parser.add_argument("--parity", action="store_true", help="compare all golden values instead of timing")
    parser.add_argument("--baseline", metavar="SRC", help="also time the dialeval of another source tree "
                        "(e.g. a checkout of main's src/) side by side, with one worker")
    args = parser.parse_args()
    if args.parity:
        parity()
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    if args.build_cache:
        tmp = tempfile.mkdtemp(prefix="dialeval-meteor-cache-")
        env = dict(os.environ, DIALEVAL_CACHE_DIR=tmp)
        code = ("import time; t=time.perf_counter(); "
                "from dialeval.metrics.overlap.meteor.resources import load_resources; load_resources(); "
                "print(time.perf_counter()-t)")
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        wall = time.perf_counter() - t0
        print(f"cache build (from paraphrase-en.gz, fresh process): {wall:.2f} s wall "
              f"({float(out.stdout.strip()):.2f} s inside)")
        shutil.rmtree(tmp, ignore_errors=True)
    else:  # make sure the default cache exists before timing
        subprocess.run([sys.executable, "-c", "from dialeval.metrics.overlap.meteor.resources import "
                        "load_resources; load_resources()"], check=True)

    workers = [int(w) for w in args.workers.split(",")]
    print(f"{'set':8s} {'mode':5s} {'jar start':>9s} {'jar score':>9s} {'jar total':>9s} "
          + "".join(f" {'ours w=' + str(w):>9s} {'ratio':>6s}" for w in workers)
          + (f" {'before':>9s} {'ratio':>6s}" if args.baseline else "")
          + "   CPU s jar / ours (w=..)" + (" / before" if args.baseline else "")
          + "   CPU ratio jar/ours (w=..)   (ours: load + scoring inside)  corpus jar / ours")
    for name in args.sets.split(","):
        hyps, refs = load_set(name)
        for mode in args.modes.split(","):
            jar_runs = []
            ours: dict[int, list] = {w: [] for w in workers}
            before: list = []
            for _ in range(args.runs):
                if not args.no_jar:
                    jar_runs.append(run_jar(hyps, refs, mode))
                for w in workers:
                    ours[w].append(run_dialeval(name, mode, w))
                if args.baseline:
                    before.append(run_dialeval(name, mode, 1, args.baseline))
            total = statistics.median(j[0] + j[1] for j in jar_runs) if jar_runs else float("nan")
            line = (f"{name:8s} {mode:5s} "
                    + (f"{statistics.median(j[0] for j in jar_runs):9.2f} "
                       f"{statistics.median(j[1] for j in jar_runs):9.2f} {total:9.2f}" if jar_runs
                       else f"{'-':>9s} {'-':>9s} {'-':>9s}"))
            inside = []
            cpu = [f"{statistics.median(j[3] for j in jar_runs):.1f}" if jar_runs else "-"]
            for w in workers:
                wall = statistics.median(x for x, _ in ours[w])
                line += f" {wall:9.2f} {total / wall:5.1f}x"
                info = ours[w][0][1]
                inside.append(f"w={w}: {info['resources']:.2f}+{info['scoring']:.2f}")
                cpu.append(f"{statistics.median(x['cpu'] for _, x in ours[w]):.1f}")
            if before:
                wall = statistics.median(x for x, _ in before)
                line += f" {wall:9.2f} {total / wall:5.1f}x"
                cpu.append(f"{statistics.median(x['cpu'] for _, x in before):.1f}")
            jar_cpu = statistics.median(j[3] for j in jar_runs) if jar_runs else float("nan")
            cpu_ratio = " / ".join(f"{jar_cpu / statistics.median(x['cpu'] for _, x in ours[w]):.1f}x"
                                   for w in workers)
            corpus = f"{jar_runs[0][2]:.6f}" if jar_runs else "-"
            print(line + "   " + " / ".join(cpu) + "   " + cpu_ratio + "   (" + ", ".join(inside)
                  + f")  {corpus} / {ours[workers[0]][0][1]['corpus']:.6f}",
                  flush=True)


if __name__ == "__main__":
    main()
